package bench

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// The sync-flush counting wrapper keeps the capabilities of the segment it
// wraps, so that sync runs get the engine's write-ahead prefault and its
// SYNC_FLUSH pwrite path too.
func TestCountingSegmentKeepsPrefaulter(t *testing.T) {
	var seg backend.Segment = countingSegment{}
	if _, ok := seg.(backend.WritePrefaulter); !ok {
		t.Fatal("countingSegment hides backend.WritePrefaulter")
	}
	if _, ok := seg.(backend.Prefaulter); !ok {
		t.Fatal("countingSegment hides backend.Prefaulter")
	}
	if _, ok := seg.(backend.ReadPrefaulter); !ok {
		t.Fatal("countingSegment hides backend.ReadPrefaulter")
	}
	if _, ok := seg.(backend.Pwriter); !ok {
		t.Fatal("countingSegment hides backend.Pwriter (the SYNC_FLUSH CommitLog's write path)")
	}
}
