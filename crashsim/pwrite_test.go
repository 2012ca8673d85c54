package crashsim_test

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/crashsim"
)

// pwrite writes p with the segment's Pwrite, cut into three pieces as the
// engine passes a record (head, body, tail).
func pwrite(t testing.TB, seg backend.Segment, p []byte, off int64) (int, error) {
	t.Helper()
	pw, ok := seg.(backend.Pwriter)
	if !ok {
		t.Fatalf("%T is not a backend.Pwriter", seg)
	}
	a, b := len(p)/3, 2*len(p)/3
	return pw.Pwrite([][]byte{p[:a], p[a:b], p[b:]}, off)
}

// A pwrite is modelled exactly like a copy into a mapping: in the page
// cache until a Sync, then durable; unsynced pages may be lost or torn.
func TestPwriteSyncedSurvivesUnsyncedMayVanish(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFS(t, crashsim.Options{})
		seg := durableFile(t, f, "f")
		synced := fill(1, 2*crashsim.PageSize)
		_, err := pwrite(t, seg, synced, 0)
		check(t, err)
		check(t, seg.Sync(0, int64(len(synced))))
		_, err = pwrite(t, seg, fill(2, crashsim.PageSize), 2*crashsim.PageSize) // never synced
		check(t, err)
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
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	_, err := pwrite(t, seg, fill(3, 100), 10)
	check(t, err)
	if got := read(t, f.Crash(crashsim.Oldest), "d/f"); !bytes.Equal(got[10:110], fill(0, 100)) {
		t.Fatal("an unsynced pwrite survived the all-lost crash")
	}
	if got := read(t, f.Crash(crashsim.Newest), "d/f"); !bytes.Equal(got[10:110], fill(3, 100)) {
		t.Fatal("an unsynced pwrite is missing from the all-kept crash")
	}
}

func TestPwriteInjectedFaults(t *testing.T) {
	f := newFS(t, crashsim.Options{})
	seg := durableFile(t, f, "f")
	f.SetInjector(crashsim.Fail(crashsim.Nth(1, crashsim.OnKind(crashsim.OpWrite)), crashsim.ErrShortWrite))
	// Short: the first half of the concatenation, across piece bounds.
	if n, err := pwrite(t, seg, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0); n != 4 || !errors.Is(err, crashsim.ErrShortWrite) {
		t.Fatalf("short pwrite: %d, %v", n, err)
	}
	if got := seg.View(0, 9); !bytes.Equal(got, []byte{1, 2, 3, 4, 0, 0, 0, 0, 0}) {
		t.Fatalf("after a short pwrite: %v", got)
	}
	// A crash at a pwrite: the bytes reached the cache, nothing more runs.
	f.SetInjector(crashsim.CrashWhen(crashsim.Nth(1, crashsim.OnKind(crashsim.OpWrite))))
	if _, err := pwrite(t, seg, fill(7, 6), 20); !errors.Is(err, crashsim.ErrCrash) {
		t.Fatalf("pwrite at the crash: %v", err)
	}
	if err := seg.Sync(0, 30); !errors.Is(err, crashsim.ErrFrozen) {
		t.Fatalf("sync after the crash: %v", err)
	}
	if got := read(t, f.Crash(crashsim.Newest), "d/f"); !bytes.Equal(got[20:26], fill(7, 6)) {
		t.Fatalf("all-kept crash image %v lacks the pwrite at the crash", got[20:26])
	}
}
