package mmap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

// TestCreatePreallocates checks that Create allocates blocks rather than
// leaving a sparse file that could SIGBUS on a full disk.
func TestCreatePreallocates(t *testing.T) {
	fsys := newFS(t)
	probe, err := os.Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	err = fallocate(int(probe.Fd()), 4096)
	_ = probe.Close()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("file system does not support fallocate")
	}
	const size = 1 << 20
	mustCreate(t, fsys, "seg", size)
	if got := allocated(t, filepath.Join(fsys.Root(), "seg")); got < size {
		t.Errorf("allocated %d bytes, want >= %d", got, size)
	}
}

// TestPreallocateFallsBackToTruncate takes the path used on file systems
// without fallocate: the file gets its size, zero-filled, and maps fine.
func TestPreallocateFallsBackToTruncate(t *testing.T) {
	unsupported := func(int, int64) error { return unix.EOPNOTSUPP }
	path := filepath.Join(t.TempDir(), "seg")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 3*4096 + 5
	if err := preallocateWith(f, size, unsupported); err != nil {
		t.Fatalf("preallocateWith: %v", err)
	}
	seg, err := mapFile("seg", path, f, size, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seg.View(0, size), make([]byte, size)) {
		t.Error("fallback segment is not zero-filled")
	}
	mustWrite(t, seg, []byte{7}, size-1)
	if err := seg.data.Unmap(); err != nil {
		t.Fatal(err)
	}
}

func TestPreallocateReportsOtherErrors(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	full := func(int, int64) error { return unix.ENOSPC }
	if err := preallocateWith(f, 10, full); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("err = %v, want ENOSPC: a full disk must not fall back to a sparse file", err)
	}
}

// TestCloseKeepsUnsyncedWrites checks that Close neither loses nor needs
// to sync writes: they stay in the page cache that the next mapping shares.
func TestCloseKeepsUnsyncedWrites(t *testing.T) {
	fsys := newFS(t)
	seg := mustCreate(t, fsys, "seg", 10000)
	mustWrite(t, seg, []byte("hello"), 9995)
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustOpen(t, fsys, "seg").View(9995, 5); string(got) != "hello" {
		t.Errorf("after reopen View = %q, want %q", got, "hello")
	}
}

// TestMappingsShareMemory checks that the mapping is shared: a write through
// one segment shows in another segment of the same file and in the file.
func TestMappingsShareMemory(t *testing.T) {
	fsys := newFS(t)
	a := mustCreate(t, fsys, "seg", 8192)
	b := mustOpen(t, fsys, "seg")
	view := b.View(4000, 200)
	mustWrite(t, a, []byte("shared"), 4090)
	if got := string(view[90:96]); got != "shared" {
		t.Errorf("other mapping sees %q, want %q", got, "shared")
	}
	if err := a.Sync(4090, 6); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(fsys.Root(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(file[4090:4096]); got != "shared" {
		t.Errorf("file holds %q, want %q", got, "shared")
	}
}

// TestOpenUnalignedFile maps a file written by plain I/O whose size is not a
// multiple of the page size: the last partial page must be usable up to,
// and not past, the end of the file.
func TestOpenUnalignedFile(t *testing.T) {
	fsys := newFS(t)
	path := filepath.Join(fsys.Root(), "cfg")
	if err := os.WriteFile(path, []byte("0123456789"), filePerm); err != nil {
		t.Fatal(err)
	}
	seg := mustOpen(t, fsys, "cfg")
	if seg.Size() != 10 || string(seg.View(0, 10)) != "0123456789" {
		t.Fatalf("Size() = %d, View = %q", seg.Size(), seg.View(0, 10))
	}
	mustWrite(t, seg, []byte("X"), 9)
	if _, err := seg.WriteAt([]byte("XY"), 9); !errors.Is(err, backend.ErrRange) {
		t.Errorf("write past the end: err = %v, want ErrRange", err)
	}
	if err := seg.Sync(9, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "012345678X" {
		t.Errorf("file = %q, want %q", got, "012345678X")
	}
}

func TestViewCapacityEndsWithRange(t *testing.T) {
	seg := mustCreate(t, newFS(t), "seg", 100)
	v := seg.View(10, 5)
	if cap(v) != 5 {
		t.Fatalf("cap(View(10, 5)) = %d, want 5", cap(v))
	}
	_ = append(v, 1) // must reallocate, not write byte 15 of the segment
	if seg.View(15, 1)[0] != 0 {
		t.Error("append to a view wrote into the segment")
	}
}

func TestAdvise(t *testing.T) {
	fsys := newFS(t)
	seg := mustCreate(t, fsys, "seg", 1<<20)
	adv, ok := seg.(Adviser)
	if !ok {
		t.Fatal("segment does not implement Adviser")
	}
	for _, a := range []int{unix.MADV_WILLNEED, unix.MADV_SEQUENTIAL, unix.MADV_NORMAL} {
		if err := adv.Advise(a); err != nil {
			t.Errorf("Advise(%d): %v", a, err)
		}
	}
	if err := mustCreate(t, fsys, "empty", 0).(Adviser).Advise(unix.MADV_WILLNEED); err != nil {
		t.Errorf("Advise on an empty segment: %v", err)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := adv.Advise(unix.MADV_WILLNEED); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Advise after Close: err = %v, want ErrClosed", err)
	}
}

// allocated returns the bytes of disk allocated to the file at path.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no block count on this platform")
	}
	return st.Blocks * 512 // st_blocks counts 512-byte units whatever the block size
}

// A process killed while creating a file leaves only a hidden temporary
// file: never a short file under the real name.
func TestCreateLeftoverIsHiddenAndReplaced(t *testing.T) {
	dir := t.TempDir()
	fsys, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	// What a kill between open and preallocate leaves behind.
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000"+creatingSuffix), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := fsys.List("")
	if err != nil || len(names) != 0 {
		t.Fatalf("List = %v, %v; want the leftover hidden", names, err)
	}
	seg, err := fsys.Create("00000000000000000000", 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if size, err := fsys.Stat("00000000000000000000"); err != nil || size != 8192 {
		t.Fatalf("Stat = %d, %v", size, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000000"+creatingSuffix)); !os.IsNotExist(err) {
		t.Fatalf("temporary file still there: %v", err)
	}
}

// TestCreateHoldsNoUnlinkedName: the descriptor a new segment keeps open
// is on its real name, not on the temporary one Create unlinks. A file
// system that cannot unlink an open file (FUSE, NFS) would otherwise keep
// the temporary name as .fuse_hidden<N> or .nfs<N> beside every segment,
// and a crash would leave those behind. Linux shows a descriptor whose
// name was unlinked as "path (deleted)".
func TestCreateHoldsNoUnlinkedName(t *testing.T) {
	dir := t.TempDir()
	fsys, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{0, 8192} {
		name := fmt.Sprintf("%020d", size)
		s, err := fsys.Create(name, size)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s.(*segment).fd))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(fsys.Root(), name); got != want {
			t.Errorf("size %d: the segment's descriptor is on %q, want %q", size, got, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
