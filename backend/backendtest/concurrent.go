package backendtest

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

var concurrentTests = []test{
	{"DisjointWriters", testDisjointWriters},
	{"ReadersFollowPublishedWrites", testPublishedWrites},
}

// testDisjointWriters has goroutines write, view and sync their own slices
// of one segment at once. The slices share pages, so a backend that syncs or
// tracks whole pages must not race on them.
func testDisjointWriters(t *testing.T, fsys backend.FS) {
	const writers, chunk = 8, 100
	const region = 4*pageSize/writers + 13 // several chunks, not page-aligned
	seg := create(t, fsys, "seg", writers*region)
	want := make([]byte, 0, seg.Size())
	var wg sync.WaitGroup
	for w := range writers {
		data := pattern(region, byte(w))
		want = append(want, data...)
		wg.Go(func() {
			base := int64(w * region)
			for off := 0; off < region; off += chunk {
				end := min(off+chunk, region)
				if _, err := seg.WriteAt(data[off:end], base+int64(off)); err != nil {
					t.Errorf("writer %d: WriteAt: %v", w, err)
					return
				}
				if err := seg.Sync(base+int64(off), int64(end-off)); err != nil {
					t.Errorf("writer %d: Sync: %v", w, err)
					return
				}
			}
			if !bytes.Equal(seg.View(base, region), data) {
				t.Errorf("writer %d: View does not show its writes", w)
			}
		})
	}
	wg.Wait()
	closeSeg(t, seg)
	wantContent(t, open(t, fsys, "seg"), want)
}

// testPublishedWrites models the engine: one writer appends records and
// publishes its position atomically after each WriteAt returns, readers View
// and a flusher Syncs only below that position, all at once.
func testPublishedWrites(t *testing.T, fsys backend.FS) {
	const size = 16*pageSize + 37
	seg := create(t, fsys, "seg", size)
	var pos atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		rec := make([]byte, recSize)
		for off := int64(0); off+recSize <= size; off += recSize {
			for i := range rec {
				rec[i] = recordByte(off)
			}
			if _, err := seg.WriteAt(rec, off); err != nil {
				t.Errorf("writer: WriteAt(%d): %v", off, err)
				return
			}
			pos.Store(off + recSize)
		}
	})
	for r := range 3 {
		wg.Go(func() {
			follow(&pos, done, func(from, to int64) bool {
				return checkRecords(t, r, seg.View(from, to-from), from, to)
			})
		})
	}
	wg.Go(func() {
		follow(&pos, done, func(from, to int64) bool {
			if err := seg.Sync(from, to-from); err != nil {
				t.Errorf("flusher: Sync(%d, %d): %v", from, to-from, err)
				return false
			}
			return true
		})
	})
	wg.Wait()
	syncAll(t, seg)
	closeSeg(t, seg)
	end := pos.Load()
	checkRecords(t, -1, open(t, fsys, "seg").View(0, end), 0, end)
}

// recSize is the record size of testPublishedWrites, chosen so that records
// straddle pages.
const recSize = 100

// recordByte is the fill byte of the record at off; never zero, so that an
// unwritten record is caught.
func recordByte(off int64) byte { return byte(off/recSize%255) + 1 }

// follow calls visit on each newly published range [from, to) until the
// writer is done and everything has been visited, or visit returns false.
func follow(pos *atomic.Int64, done <-chan struct{}, visit func(from, to int64) bool) {
	var seen int64
	for {
		// Check done before loading pos: the writer closes done after its
		// last Store, so a done writer's final position is seen below.
		finished := isClosed(done)
		to := pos.Load()
		switch {
		case to > seen:
			if !visit(seen, to) {
				return
			}
			seen = to
		case finished:
			return
		default:
			runtime.Gosched()
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// checkRecords reports whether v is the view of [from, to) and holds the
// records written there; reader -1 is the check after reopening.
func checkRecords(t *testing.T, reader int, v []byte, from, to int64) bool {
	if int64(len(v)) != to-from {
		t.Errorf("reader %d: View(%d, %d) returned %d bytes", reader, from, to-from, len(v))
		return false
	}
	for i, b := range v {
		off := from + int64(i)
		if want := recordByte(off); b != want {
			t.Errorf("reader %d: byte %d = %#x, want %#x", reader, off, b, want)
			return false
		}
	}
	return true
}
