package engine

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
)

// stagedCQ returns a queue of 8-unit files whose units are staged, as
// during abnormal recovery's scan.
func stagedCQ(t *testing.T, fs backend.FS) (*consumeQueue, *unitStaging) {
	cq := newTestCQ(t, fs)
	st := &unitStaging{}
	st.attach(cq)
	return cq, st
}

// Staged units reach their files, across file boundaries, when staging
// ends, on both backends (mmap writes them with pwrite); until then only
// positions move.
func TestStagedUnitsReachTheFiles(t *testing.T) {
	mfs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, fs := range map[string]backend.FS{"memfs": memfs.New(nil), "mmap": mfs} {
		t.Run(name, func(t *testing.T) {
			cq, st := stagedCQ(t, fs)
			for i := range int64(20) {
				mustPutUnit(t, cq, 100*i, i)
			}
			if cq.MaxOffsetInQueue() != 20 {
				t.Fatalf("max offset %d, want 20", cq.MaxOffsetInQueue())
			}
			if _, ok := cq.UnitAt(19); !ok {
				t.Fatal("unit 19 not published")
			}
			s := &Store{staging: st}
			if err := s.endUnitStaging(); err != nil {
				t.Fatal(err)
			}
			if cq.stage != nil || s.staging != nil {
				t.Fatal("staging still attached")
			}
			for i := range int64(20) {
				if u, ok := cq.UnitAt(i); !ok || u != (Unit{100 * i, 100, 7}) {
					t.Fatalf("unit %d = %+v, %v", i, u, ok)
				}
			}
			mustPutUnit(t, cq, 2000, 20) // through the mapping again
			if u, _ := cq.UnitAt(20); u != (Unit{2000, 100, 7}) {
				t.Fatalf("unit 20 = %+v", u)
			}
		})
	}
}

// A replay that reaches replayedUnitMatches compares against the staged
// unit, not the zeros still in the file: without the flush there, a
// matching replay would be taken for another record's unit.
func TestReplayedUnitMatchesSeesStagedUnits(t *testing.T) {
	cq, _ := stagedCQ(t, memfs.New(nil))
	for i := range int64(5) {
		mustPutUnit(t, cq, 100*i, i)
	}
	if err := cq.replayedUnitMatches(3*CQUnitSize, Unit{300, 100, 7}); err != nil {
		t.Fatalf("matching replay: %v", err)
	}
	if err := cq.replayedUnitMatches(3*CQUnitSize, Unit{301, 100, 7}); err == nil {
		t.Fatal("another record's unit accepted")
	}
}

// Beyond maxStagedQueues, queues write through the mapping.
func TestStagingIsBounded(t *testing.T) {
	st := &unitStaging{}
	for range maxStagedQueues + 1 {
		st.attach(&consumeQueue{})
	}
	if len(st.queues) != maxStagedQueues {
		t.Fatalf("%d staged queues", len(st.queues))
	}
}
