package verify

import (
	"strings"
	"testing"
	"time"
)

// TestSummaryShowsCheckpointTimesInHumanUnits: an operator reads the
// checkpoint's times as dates with their age, not as epoch milliseconds.
func TestSummaryShowsCheckpointTimesInHumanUnits(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	r := &Report{LastStoreTimestamp: now.Add(-90 * time.Second).UnixMilli(),
		Checkpoint: Checkpoint{Present: true, PhysicMsgTimestamp: now.Add(-90 * time.Second).UnixMilli(),
			LogicsMsgTimestamp: now.Add(-2 * time.Hour).UnixMilli(), IndexMsgTimestamp: 0}}
	got := r.summaryAt(now)
	want := "checkpoint: physic 2026-12-06T09:58:30.000Z (1m30s ago), logics 2026-12-06T08:00:00.000Z (2h0m0s ago), " +
		"index never; last record stored 2026-12-06T09:58:30.000Z (1m30s ago)\n"
	if !strings.Contains(got, want) {
		t.Fatalf("summary:\n%s\nwant a line\n%s", got, want)
	}
	r.Checkpoint.PhysicMsgTimestamp = now.Add(time.Minute).UnixMilli()
	if got := r.summaryAt(now); !strings.Contains(got, "physic 2026-12-06T10:01:00.000Z (1m0s in the future)") {
		t.Fatalf("a checkpoint ahead of now:\n%s", got)
	}
}
