package engine

import (
	"testing"
	"time"
)

// The default clock stays within a few ms of time.Now and never runs
// backwards across its once-a-second re-anchoring.
func TestWallMillisFollowsTimeNow(t *testing.T) {
	now := wallMillis()
	prev := now()
	deadline := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) {
		before := time.Now().UnixMilli()
		got := now()
		after := time.Now().UnixMilli()
		if got < prev {
			t.Fatalf("went backwards: %d after %d", got, prev)
		}
		if got < before-2 || got > after+2 {
			t.Fatalf("wallMillis %d, time.Now %d..%d ms", got, before, after)
		}
		prev = got
		// The subject is the wall clock: sample it across a re-anchoring.
		time.Sleep(time.Millisecond)
	}
}
