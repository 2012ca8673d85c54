package memfs_test

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// size spans several pages and ends with a partial one.
const size = 4*memfs.PageSize + 100

func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) ^ seed | 1
	}
	return p
}

func create(t *testing.T, fsys backend.FS, name string, n int64) backend.Segment {
	t.Helper()
	seg, err := fsys.Create(name, n)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	return seg
}

func open(t *testing.T, fsys backend.FS, name string) backend.Segment {
	t.Helper()
	seg, err := fsys.Open(name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return seg
}

func write(t *testing.T, seg backend.Segment, p []byte, off int64) {
	t.Helper()
	if n, err := seg.WriteAt(p, off); err != nil || n != len(p) {
		t.Fatalf("WriteAt(len %d, %d) = %d, %v", len(p), off, n, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// powerCut abandons f and returns the FS that a reboot would see.
func powerCut(f *memfs.FS) *memfs.FS { return memfs.New(f.Afero()) }

// content opens name, returns a copy of its bytes and closes it.
func content(t *testing.T, fsys backend.FS, name string) []byte {
	t.Helper()
	data, err := backend.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("ReadFile(%q): %v", name, err)
	}
	return data
}

func wantBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes differing from the %d wanted", what, len(got), len(want))
	}
}

// syncedFile creates name holding data, synced and closed.
func syncedFile(t *testing.T, f *memfs.FS, name string, data []byte) {
	t.Helper()
	seg := create(t, f, name, int64(len(data)))
	write(t, seg, data, 0)
	must(t, seg.Sync(0, seg.Size()))
	must(t, seg.Close())
}

func TestUnsyncedWritesLostOnPowerCut(t *testing.T) {
	f := memfs.New(nil)
	old, cur := pattern(size, 1), pattern(size, 2)
	syncedFile(t, f, "a", old)

	seg := open(t, f, "a")
	write(t, seg, cur, 0)
	wantBytes(t, "View before the cut", seg.View(0, size), cur)

	wantBytes(t, "after the cut", content(t, powerCut(f), "a"), old)
}

func TestUnsyncedCreateReadsZeros(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	write(t, seg, pattern(size, 1), 0)
	wantBytes(t, "after the cut", content(t, powerCut(f), "a"), make([]byte, size))
}

func TestSyncedWritesSurvivePowerCut(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	data := pattern(size, 1)
	write(t, seg, data, 0)
	must(t, seg.Sync(0, size))
	wantBytes(t, "after the cut", content(t, powerCut(f), "a"), data)
}

func TestSyncOfSubRangePersistsOnlyTouchedPages(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	data := pattern(size, 1)
	write(t, seg, data, 0)
	// Two bytes straddling the boundary of pages 1 and 2.
	must(t, seg.Sync(2*memfs.PageSize-1, 2))

	want := make([]byte, size)
	copy(want[memfs.PageSize:3*memfs.PageSize], data[memfs.PageSize:])
	wantBytes(t, "after the cut", content(t, powerCut(f), "a"), want)

	var offs []int64
	for _, p := range f.DirtyPages() {
		offs = append(offs, p.Off)
	}
	if want := []int64{0, 3 * memfs.PageSize, 4 * memfs.PageSize}; !slices.Equal(offs, want) {
		t.Fatalf("dirty pages at %v, want %v", offs, want)
	}
}

func TestSyncWritesDirtyPagesOnly(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	write(t, seg, []byte{1}, 0)
	must(t, seg.Sync(0, size))

	// Change page 1 of the durable image behind memfs's back: a Sync that
	// rewrote clean pages from the buffer would undo it.
	file, err := f.Afero().OpenFile("a", os.O_RDWR, 0)
	must(t, err)
	_, err = file.WriteAt([]byte{9}, memfs.PageSize)
	must(t, err)
	must(t, file.Close())

	write(t, seg, []byte{2}, 2*memfs.PageSize)
	must(t, seg.Sync(0, size))
	if n := len(f.DirtyPages()); n != 0 {
		t.Fatalf("%d dirty pages after Sync, want 0", n)
	}
	got := content(t, powerCut(f), "a")
	if got[0] != 1 || got[memfs.PageSize] != 9 || got[2*memfs.PageSize] != 2 {
		t.Fatalf("durable bytes %d %d %d, want 1 9 2", got[0], got[memfs.PageSize], got[2*memfs.PageSize])
	}
	must(t, seg.Close())
}

func TestDirtyPages(t *testing.T) {
	f := memfs.New(nil)
	must(t, f.MkdirAll("d"))
	b := create(t, f, "d/b", size)
	a := create(t, f, "d/a", size)
	write(t, b, []byte{7}, size-1) // last, partial page
	write(t, a, []byte{8, 9}, memfs.PageSize+5)

	got := f.DirtyPages()
	if len(got) != 2 {
		t.Fatalf("DirtyPages() = %d pages, want 2", len(got))
	}
	if got[0].Name != "d/a" || got[0].Off != memfs.PageSize || len(got[0].Data) != memfs.PageSize ||
		got[0].Data[5] != 8 || got[0].Data[6] != 9 {
		t.Errorf("page 0 = {%q %d len %d}", got[0].Name, got[0].Off, len(got[0].Data))
	}
	if got[1].Name != "d/b" || got[1].Off != 4*memfs.PageSize || len(got[1].Data) != 100 ||
		got[1].Data[99] != 7 {
		t.Errorf("page 1 = {%q %d len %d}", got[1].Name, got[1].Off, len(got[1].Data))
	}

	got[0].Data[5] = 0 // a copy: the page cache must not change
	if v := a.View(memfs.PageSize+5, 1); v[0] != 8 {
		t.Fatal("DirtyPages returned the page cache itself, not a copy")
	}
	must(t, a.Close())
	must(t, b.Close())
}

func TestCloseKeepsPageCacheButDoesNotSync(t *testing.T) {
	f := memfs.New(nil)
	data := pattern(size, 1)
	seg := create(t, f, "a", size)
	write(t, seg, data, 0)
	must(t, seg.Close())

	// A process that closed a file without fsync reads its data back...
	wantBytes(t, "reopened", content(t, f, "a"), data)
	if n := len(f.DirtyPages()); n != pageCountOf(size) {
		t.Fatalf("%d dirty pages after Close, want %d", n, pageCountOf(size))
	}
	// ...but a power cut loses it.
	wantBytes(t, "after the cut", content(t, powerCut(f), "a"), make([]byte, size))

	// A reopened segment owns those pages again, so its Sync persists them.
	seg = open(t, f, "a")
	must(t, seg.Sync(0, size))
	must(t, seg.Close())
	wantBytes(t, "synced after reopening", content(t, powerCut(f), "a"), data)
}

func pageCountOf(n int) int { return (n + memfs.PageSize - 1) / memfs.PageSize }

func TestRenameCarriesPageCache(t *testing.T) {
	f := memfs.New(nil)
	must(t, f.MkdirAll("d"))
	data := pattern(size, 1)

	closed := create(t, f, "d/closed", size)
	write(t, closed, data, 0)
	must(t, closed.Close())
	opened := create(t, f, "d/open", size)
	write(t, opened, data, 0)

	must(t, f.Rename("d/closed", "d/x"))
	must(t, f.Rename("d", "e"))
	for _, p := range f.DirtyPages() {
		if p.Name != "e/x" && p.Name != "e/open" {
			t.Fatalf("dirty page under %q, want e/x or e/open", p.Name)
		}
	}
	must(t, opened.Close())
	wantBytes(t, "e/x", content(t, f, "e/x"), data)
	wantBytes(t, "e/open", content(t, f, "e/open"), data)
	if opened.Name() != "d/open" {
		t.Errorf("Name() = %q after rename, want the name it was created with", opened.Name())
	}
}

func TestRenameOverFileDropsItsPageCache(t *testing.T) {
	f := memfs.New(nil)
	victim := create(t, f, "b", size)
	write(t, victim, pattern(size, 1), 0)
	syncedFile(t, f, "a", pattern(size, 2))

	must(t, f.Rename("a", "b"))
	must(t, victim.Close()) // unlinked: its pages belong to no name
	if n := len(f.DirtyPages()); n != 0 {
		t.Fatalf("%d dirty pages, want 0", n)
	}
	wantBytes(t, "b", content(t, f, "b"), pattern(size, 2))
}

func TestRemoveDropsPageCache(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	write(t, seg, pattern(size, 1), 0)
	must(t, seg.Close())
	must(t, f.Remove("a"))

	wantBytes(t, "recreated", content(t, f, mustCreate(t, f, "a")), make([]byte, size))
}

func mustCreate(t *testing.T, f backend.FS, name string) string {
	t.Helper()
	must(t, create(t, f, name, size).Close())
	return name
}

func TestRemoveAll(t *testing.T) {
	f := memfs.New(nil)
	must(t, f.MkdirAll("d/e"))
	seg := create(t, f, "d/e/a", size)
	write(t, seg, []byte{1}, 0)
	must(t, seg.Close())
	mustCreate(t, f, "d/b")
	mustCreate(t, f, "keep")

	must(t, f.RemoveAll("d"))
	if _, err := f.Stat("d/b"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("Stat(d/b) after RemoveAll: %v", err)
	}
	if n := len(f.DirtyPages()); n != 0 {
		t.Fatalf("%d dirty pages after RemoveAll, want 0", n)
	}
	must(t, f.RemoveAll("d")) // missing: no error
	names, err := f.List(".")
	must(t, err)
	if strings.Join(names, ",") != "keep" {
		t.Fatalf("List(.) = %q, want [keep]", names)
	}

	must(t, f.RemoveAll("."))
	names, err = f.List("")
	must(t, err)
	if len(names) != 0 {
		t.Fatalf("List after RemoveAll(.) = %q", names)
	}
	mustCreate(t, f, "again") // the root still works
}

func TestListSorted(t *testing.T) {
	f := memfs.New(nil)
	must(t, f.MkdirAll("q/sub2"))
	must(t, f.MkdirAll("q/sub1"))
	for _, n := range []string{"q/00000000000000001024", "q/b", "q/00000000000000000000", "q/a"} {
		mustCreate(t, f, n)
	}
	files, err := f.List("q")
	must(t, err)
	if got := strings.Join(files, ","); got != "00000000000000000000,00000000000000001024,a,b" {
		t.Errorf("List(q) = %s", got)
	}
	dirs, err := f.ListDirs("q")
	must(t, err)
	if got := strings.Join(dirs, ","); got != "sub1,sub2" {
		t.Errorf("ListDirs(q) = %s", got)
	}
	if _, err := f.List("missing"); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("List(missing): %v, want ErrNotExist", err)
	}
}

func TestErrors(t *testing.T) {
	f := memfs.New(nil)
	mustCreate(t, f, "a")
	tests := []struct {
		call string
		err  error
		want error
	}{
		{"Open(missing)", second(f.Open("missing")), backend.ErrNotExist},
		{"Stat(missing)", second(f.Stat("missing")), backend.ErrNotExist},
		{"Remove(missing)", f.Remove("missing"), backend.ErrNotExist},
		{"Rename(missing)", f.Rename("missing", "b"), backend.ErrNotExist},
		{"Create(a)", second(f.Create("a", 1)), backend.ErrExist},
		{"Create(missing/a)", second(f.Create("missing/a", 1)), backend.ErrNotExist},
		{"SyncDir(missing)", f.SyncDir("missing"), backend.ErrNotExist},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.call, tc.err, tc.want)
		} else if !strings.Contains(tc.err.Error(), "missing") && !strings.Contains(tc.err.Error(), "a") {
			t.Errorf("%s: %q names no file", tc.call, tc.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestWriteAtOutOfRangeWritesNothing(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	for _, off := range []int64{-1, size - 1, size, 1 << 62} {
		if _, err := seg.WriteAt([]byte{1, 2}, off); !errors.Is(err, backend.ErrRange) {
			t.Errorf("WriteAt(2 bytes, %d): %v, want ErrRange", off, err)
		}
	}
	if err := seg.Sync(size-1, 2); !errors.Is(err, backend.ErrRange) {
		t.Errorf("Sync past the end: %v, want ErrRange", err)
	}
	wantBytes(t, "View", seg.View(0, size), make([]byte, size))
	if n := len(f.DirtyPages()); n != 0 {
		t.Fatalf("%d dirty pages, want 0", n)
	}
	must(t, seg.Close())
}

func TestClosedSegment(t *testing.T) {
	f := memfs.New(nil)
	seg := create(t, f, "a", size)
	must(t, seg.Close())
	if _, err := seg.WriteAt([]byte{1}, 0); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("WriteAt after Close: %v", err)
	}
	if err := seg.Sync(0, 1); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
	if v := seg.View(0, 1); v != nil {
		t.Errorf("View after Close = %v, want nil", v)
	}
}

func TestNamesAreRelativeToRoot(t *testing.T) {
	f := memfs.New(nil)
	must(t, f.MkdirAll("/d/"))
	syncedFile(t, f, "/d/../d/./a", []byte("x"))
	wantBytes(t, "d/a", content(t, f, "d/a"), []byte("x"))
	// ".." cannot climb out of the root.
	wantBytes(t, "../d/a", content(t, f, "../d/a"), []byte("x"))
}

func TestLock(t *testing.T) {
	f := memfs.New(nil)
	l, err := f.Lock("lock")
	must(t, err)
	if _, err := f.Lock("./lock"); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if _, err := f.Stat("lock"); err != nil {
		t.Fatalf("lock file not created: %v", err)
	}
	must(t, l.Unlock())
	must(t, l.Unlock())
	l, err = f.Lock("lock")
	must(t, err)
	must(t, l.Unlock())
}
