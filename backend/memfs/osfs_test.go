package memfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// On an OsFs memfs is a plain file backend: Sync reaches the real file.
func TestOsFsSyncReachesDisk(t *testing.T) {
	dir := t.TempDir()
	f := memfs.New(afero.NewBasePathFs(afero.NewOsFs(), dir))
	must(t, f.MkdirAll("store/commitlog"))
	seg := create(t, f, "store/commitlog/0", size)
	data := pattern(size, 3)
	write(t, seg, data, 0)
	must(t, seg.Sync(0, size))
	must(t, seg.Close())
	must(t, f.SyncDir("store/commitlog"))

	got, err := os.ReadFile(filepath.Join(dir, "store", "commitlog", "0"))
	must(t, err)
	wantBytes(t, "file on disk", got, data)
}
