package engine

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

func newTestCQ(t *testing.T, fs backend.FS) *consumeQueue {
	t.Helper()
	cq := newConsumeQueue(fs, consumeQueueDir, "t", 0, 8)
	t.Cleanup(cq.q.shutdown)
	return cq
}

func mustPutUnit(t *testing.T, cq *consumeQueue, off int64, cqOffset int64) {
	t.Helper()
	if ok, err := cq.putMessagePositionInfo(off, 100, 7, cqOffset); !ok || err != nil {
		t.Fatalf("put unit %d: %v %v", cqOffset, ok, err)
	}
}

// A queue whose first unit starts a later file still gets its minimum.
func TestPreBlankAtFileBoundary(t *testing.T) {
	cq := newTestCQ(t, memfs.New(nil))
	mustPutUnit(t, cq, 1000, 16)
	if cq.MinOffsetInQueue() != 16 || cq.MaxOffsetInQueue() != 17 || cq.q.firstFile().fileFromOffset != 16*CQUnitSize {
		t.Fatalf("min %d max %d first file %d", cq.MinOffsetInQueue(), cq.MaxOffsetInQueue(), cq.q.firstFile().fileFromOffset)
	}
	if err := cq.flushAll(); err != nil || cq.q.FlushedWhere() != 17*CQUnitSize {
		t.Fatalf("flush: %v, flushed to %d", err, cq.q.FlushedWhere())
	}
}

// A replay of unit 0 (maxPhysicOffset lost) is skipped, not appended twice.
func TestReplayOfUnitZero(t *testing.T) {
	cq := newTestCQ(t, memfs.New(nil))
	mustPutUnit(t, cq, 0, 0)
	mustPutUnit(t, cq, 100, 1)
	cq.maxPhysicOffset.Store(-1)
	mustPutUnit(t, cq, 0, 0)
	mustPutUnit(t, cq, 100, 1)
	if cq.MaxOffsetInQueue() != 2 {
		t.Fatalf("max %d after replay, want 2", cq.MaxOffsetInQueue())
	}
	// A gap is refused rather than written at the wrong index.
	if _, err := cq.putMessagePositionInfo(500, 100, 0, 5); err == nil {
		t.Fatal("a unit after a gap was accepted")
	}
}

// An empty leftover file that does not hold the next unit is replaced.
func TestEmptyFileElsewhereReplaced(t *testing.T) {
	fs := memfs.New(nil)
	cq := newTestCQ(t, fs)
	mustPutUnit(t, cq, 0, 0)
	if err := cq.q.truncateDirtyFiles(0); err != nil { // recovery cut everything
		t.Fatal(err)
	}
	mustPutUnit(t, cq, 5000, 20)
	files := cq.q.snapshot()
	if len(files) != 1 || files[0].fileFromOffset != 16*CQUnitSize || cq.MinOffsetInQueue() != 20 || cq.MaxOffsetInQueue() != 21 {
		t.Fatalf("files %d from %d, min %d max %d", len(files), files[0].fileFromOffset, cq.MinOffsetInQueue(), cq.MaxOffsetInQueue())
	}
	if u, ok := cq.UnitAt(20); !ok || u.CommitLogOffset != 5000 {
		t.Fatalf("unit 20: %+v %v", u, ok)
	}
	if u, ok := cq.UnitAt(16); ok {
		t.Fatalf("unit 16 below the minimum: %+v", u)
	}
	if err := cq.flushAll(); err != nil || cq.q.FlushedWhere() != 21*CQUnitSize {
		t.Fatalf("flush: %v, flushed to %d", err, cq.q.FlushedWhere())
	}
}
