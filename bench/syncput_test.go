package bench

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSyncBoundFileIsACommitLogFile: the sync put's bound writes a file of
// the CommitLog's size, preallocated as the mmap backend preallocates a
// CommitLog file, and writes it with pwrite and msync of the pages
// written. A bound file of another size met another extent layout and
// synced at another rate than the store.
func TestSyncBoundFileIsACommitLogFile(t *testing.T) {
	const size = 8 << 20
	e := env{spec: Spec{CommitLogFileSize: size}, dir: t.TempDir()}
	fb, err := e.openSyncBound()
	if err != nil {
		t.Fatal(err)
	}
	defer fb.close()
	path := filepath.Join(fb.dir, "syncbound")
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 < size {
		t.Fatalf("bound file: %d bytes, %d allocated; want %d, preallocated", st.Size, st.Blocks*512, size)
	}
	if err := fb.run(0, 1000); err != nil { // one chunk at least
		t.Fatal(err)
	}
	if fb.chunks != 1 || fb.written != 1000 {
		t.Fatalf("%d chunks, %d bytes after one", fb.chunks, fb.written)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got[999] != byte(999%256) || got[1000] != 0 {
		t.Fatalf("the chunk did not reach the file: %d %d", got[999], got[1000])
	}
	b := fb.bound(100)
	if b.MsgsPerS <= 0 || b.Name != "pwrite+msync, 1000 B batches" {
		t.Fatalf("bound %+v", b)
	}
}
