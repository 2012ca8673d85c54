package crashsim_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spf13/afero"
	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/crashsim"
)

func newFS(t testing.TB, opts crashsim.Options) *crashsim.FS {
	t.Helper()
	f, err := crashsim.New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func read(t testing.TB, afs afero.Fs, name string) []byte {
	t.Helper()
	b, err := afero.ReadFile(afs, name)
	if err != nil {
		return nil
	}
	return b
}

// durableFile creates d/name of three pages and makes its entry durable.
func durableFile(t testing.TB, f *crashsim.FS, name string) backend.Segment {
	t.Helper()
	check(t, f.MkdirAll("d"))
	check(t, f.SyncDir("."))
	seg, err := f.Create("d/"+name, 3*crashsim.PageSize)
	check(t, err)
	check(t, f.SyncDir("d"))
	return seg
}

func TestSyncedDataSurvivesEveryCrash(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFS(t, crashsim.Options{})
		seg := durableFile(t, f, "f")
		synced := fill(1, 2*crashsim.PageSize)
		check(t, write(seg, synced, 0))
		check(t, seg.Sync(0, int64(len(synced))))
		check(t, write(seg, fill(2, crashsim.PageSize), 2*crashsim.PageSize)) // never synced
		got := read(t, f.Crash(crashsim.RapidChooser{T: rt}), "d/f")
		if !bytes.Equal(got[:len(synced)], synced) {
			rt.Fatalf("synced pages changed")
		}
		for s := 2 * crashsim.PageSize; s < len(got); s += crashsim.SectorSize {
			if sec := got[s : s+crashsim.SectorSize]; !bytes.Equal(sec, fill(0, len(sec))) && !bytes.Equal(sec, fill(2, len(sec))) {
				rt.Fatalf("sector at %d is neither old nor new", s)
			}
		}
	})
}

func write(seg backend.Segment, p []byte, off int64) error {
	_, err := seg.WriteAt(p, off)
	return err
}

func TestUnsyncedDirOpsCanVanish(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	check(t, f.MkdirAll("d"))
	seg, err := f.Create("d/f", 10)
	check(t, err)
	check(t, write(seg, []byte("x"), 0))
	check(t, seg.Sync(0, 10))
	if ok, _ := afero.Exists(f.Crash(crashsim.Oldest), "d/f"); ok {
		t.Fatal("unsynced create survived the all-lost crash")
	}
	if got := read(t, f.Crash(crashsim.Newest), "d/f"); string(got[:1]) != "x" {
		t.Fatalf("all-kept crash lost the file: %q", got)
	}
	check(t, f.SyncDir("d"))
	// The file's entry is durable, but not its directory's.
	if ok, _ := afero.Exists(f.Crash(crashsim.Oldest), "d/f"); ok {
		t.Fatal("file survived in a directory whose mkdir was lost")
	}
	check(t, f.SyncDir("."))
	if got := read(t, f.Crash(crashsim.Oldest), "d/f"); string(got[:1]) != "x" {
		t.Fatalf("synced create lost: %q", got)
	}
	check(t, f.Remove("d/f"))
	if ok, _ := afero.Exists(f.Crash(crashsim.Oldest), "d/f"); !ok {
		t.Fatal("unsynced remove persisted in the all-lost crash")
	}
}

func TestIgnoreSyncDirKeepsOpsPending(t *testing.T) {
	f := newFS(t, crashsim.Options{IgnoreSyncDir: true})
	_, err := f.Create("f", 1)
	check(t, err)
	check(t, f.SyncDir("."))
	if ok, _ := afero.Exists(f.Crash(crashsim.Oldest), "f"); ok {
		t.Fatal("IgnoreSyncDir made a create durable")
	}
}

// tornChooser tears every page and keeps the odd sectors.
type tornChooser struct{ sector int }

func (c *tornChooser) Choose(n int, what string) int {
	if n == 3 {
		return crashsim.PageTorn
	}
	if what[:6] == "sector" {
		c.sector++
		return c.sector % 2
	}
	return n - 1
}

func TestTornSectorsMix(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	check(t, write(seg, fill(7, crashsim.PageSize), 0))
	got := read(t, f.Crash(&tornChooser{}), "d/f")
	for i := 0; i < crashsim.PageSize/crashsim.SectorSize; i++ {
		want := byte(0)
		if i%2 == 0 {
			want = 7
		}
		sec := got[i*crashsim.SectorSize : (i+1)*crashsim.SectorSize]
		if !bytes.Equal(sec, fill(want, len(sec))) {
			t.Fatalf("sector %d: want all %d", i, want)
		}
	}
}

func TestRenameIsAtomic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFS(t, crashsim.Options{})
		seg := durableFile(t, f, "old")
		check(t, write(seg, []byte("data"), 0))
		check(t, seg.Sync(0, 4))
		check(t, f.Rename("d/old", "d/new"))
		if rapid.Bool().Draw(rt, "remove") {
			check(t, f.Remove("d/new"))
		}
		img := f.Crash(crashsim.RapidChooser{T: rt})
		o, _ := afero.Exists(img, "d/old")
		n, _ := afero.Exists(img, "d/new")
		if o && n {
			rt.Fatalf("file under both names")
		}
		if n && string(read(t, img, "d/new")[:4]) != "data" {
			rt.Fatalf("renamed file lost its synced data")
		}
	})
}

func TestInjectedFaults(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	f.SetInjector(crashsim.Chain(
		crashsim.Fail(crashsim.OnKind(crashsim.OpCreate), crashsim.ErrNoSpace),
		crashsim.Fail(crashsim.Nth(1, crashsim.OnKind(crashsim.OpSync)), crashsim.ErrIO),
		crashsim.Fail(crashsim.Nth(2, crashsim.OnKind(crashsim.OpWrite)), crashsim.ErrShortWrite),
	))
	if _, err := f.Create("d/g", 1); !errors.Is(err, crashsim.ErrNoSpace) {
		t.Fatalf("create: %v", err)
	}
	check(t, write(seg, fill(1, 8), 0))
	if err := seg.Sync(0, 8); !errors.Is(err, crashsim.ErrIO) {
		t.Fatalf("sync: %v", err)
	}
	check(t, seg.Sync(0, 8)) // succeeds, but the failed pages were dropped
	if got := read(t, f.Crash(crashsim.Newest), "d/f"); got[0] != 0 {
		t.Fatal("a page whose sync failed reached the disk")
	}
	if n, err := seg.WriteAt(fill(2, 8), 0); n != 4 || !errors.Is(err, crashsim.ErrShortWrite) {
		t.Fatalf("short write: %d, %v", n, err)
	}
	if got := seg.View(0, 8); !bytes.Equal(got, []byte{2, 2, 2, 2, 1, 1, 1, 1}) {
		t.Fatalf("after short write: %v", got)
	}
}

func TestCrashAtKthWriteFreezes(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	f.SetInjector(crashsim.CrashWhen(crashsim.Nth(2, crashsim.OnKind(crashsim.OpWrite))))
	check(t, write(seg, []byte{1}, 0))
	if err := write(seg, []byte{2}, 1); !errors.Is(err, crashsim.ErrCrash) {
		t.Fatalf("2nd write: %v", err)
	}
	if err := seg.Sync(0, 2); !errors.Is(err, crashsim.ErrFrozen) || !f.Frozen() {
		t.Fatalf("sync after crash: %v", err)
	}
	if got := read(t, f.Crash(crashsim.Newest), "d/f"); got[0] != 1 || got[1] != 2 {
		t.Fatalf("crash image %v: the writes before the crash are missing", got[:2])
	}
}

func TestKillKeepsPageCache(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	_, err := f.Lock("lock")
	check(t, err)
	check(t, write(seg, []byte{9}, 0))
	f.Kill()
	if seg.View(0, 1) != nil {
		t.Fatal("handle survived Kill")
	}
	_, err = f.Lock("lock")
	check(t, err)
	seg2, err := f.Open("d/f")
	check(t, err)
	if seg2.View(0, 1)[0] != 9 {
		t.Fatal("Kill dropped the page cache")
	}
}

func TestNewFromImageIsDurable(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	check(t, write(seg, []byte{5}, 0))
	g, err := crashsim.New(f.Image(), crashsim.Options{})
	check(t, err)
	if got := read(t, g.Crash(crashsim.Oldest), "d/f"); got[0] != 5 {
		t.Fatal("loaded content is not durable")
	}
	check(t, write(seg, []byte{6}, 0)) // the dying FS does not reach g
	if got := read(t, g.Crash(crashsim.Newest), "d/f"); got[0] != 5 {
		t.Fatal("crash image shares state with the FS it came from")
	}
}

func TestRemoveAllIsPendingPerEntry(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	durableFile(t, f, "f")
	check(t, f.RemoveAll("d"))
	if ok, _ := afero.Exists(f.Crash(crashsim.Oldest), "d/f"); !ok {
		t.Fatal("unsynced RemoveAll persisted")
	}
	if ok, _ := afero.Exists(f.Crash(crashsim.Newest), "d"); ok {
		t.Fatal("RemoveAll left the directory")
	}
	if _, err := f.List("d"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("list removed dir: %v", err)
	}
}

// TestReuseFreedBlocks: with the option, a never-written-back page of a new
// file may come back holding a page of a removed file, once the removal is
// durable; a page that was synced once, and the same FS without the
// option, never do.
func TestReuseFreedBlocks(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		f := newFS(t, crashsim.Options{ReuseFreedBlocks: reuse})
		old := durableFile(t, f, "old")
		check(t, write(old, fill(3, 2*crashsim.PageSize), 0))
		check(t, old.Sync(0, crashsim.PageSize)) // page 1 never reaches the disk
		check(t, old.Close())
		check(t, f.Remove("d/old"))
		if f.FreedPages() != 0 {
			t.Fatal("an unsynced remove freed blocks")
		}
		check(t, f.SyncDir("d"))
		if want := map[bool]int{false: 0, true: 1}[reuse]; f.FreedPages() != want {
			t.Fatalf("reuse %v: %d freed pages, want %d", reuse, f.FreedPages(), want)
		}
		seg, err := f.Create("d/new", 2*crashsim.PageSize)
		check(t, err)
		check(t, f.SyncDir("d"))
		check(t, write(seg, fill(4, crashsim.PageSize), 0))
		check(t, seg.Sync(0, crashsim.PageSize))
		check(t, write(seg, fill(5, 2*crashsim.PageSize), 0))
		// Page 0 was written back once: old means its synced content.
		// Page 1 never was: old means zero, or a freed block.
		stale := func(n int, what string) int { return n - 1 }
		got := read(t, f.Crash(chooserFunc(func(n int, what string) int {
			if n == 3 {
				return crashsim.PageOld
			}
			return stale(n, what)
		})), "d/new")
		if !bytes.Equal(got[:crashsim.PageSize], fill(4, crashsim.PageSize)) {
			t.Fatalf("reuse %v: a written-back page came back stale", reuse)
		}
		want := fill(0, crashsim.PageSize)
		if reuse {
			want = fill(3, crashsim.PageSize)
		}
		if !bytes.Equal(got[crashsim.PageSize:], want) {
			t.Fatalf("reuse %v: never-written page holds %d..., want %d", reuse, got[crashsim.PageSize], want[0])
		}
	}
}

type chooserFunc func(n int, what string) int

func (c chooserFunc) Choose(n int, what string) int { return c(n, what) }
