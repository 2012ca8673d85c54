package memfs_test

import (
	"fmt"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// A power cut is a new FS on the same afero.Fs: synced pages survive,
// unsynced ones do not.
func Example_powerCut() {
	fsys := memfs.New(nil)
	seg, _ := fsys.Create("00000000000000000000", 2*memfs.PageSize)
	seg.WriteAt([]byte("synced"), 0)
	seg.Sync(0, 6)
	seg.WriteAt([]byte("lost"), memfs.PageSize)
	fmt.Println("dirty pages:", len(fsys.DirtyPages()))

	rebooted := memfs.New(fsys.Afero())
	seg, _ = rebooted.Open("00000000000000000000")
	defer seg.Close()
	fmt.Printf("%s %q\n", seg.View(0, 6), seg.View(memfs.PageSize, 4))
	// Output:
	// dirty pages: 1
	// synced "\x00\x00\x00\x00"
}
