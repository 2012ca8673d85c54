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

// TestSummaryShowsSizesInHumanUnits: file sizes and the span of the log
// read in binary units, as the rest of the command line prints them;
// offsets stay exact, since other commands take them.
func TestSummaryShowsSizesInHumanUnits(t *testing.T) {
	r := &Report{CommitLogFiles: 2, CommitLogFileSize: 1 << 30, MinOffset: 1 << 30, MaxOffset: 1<<30 + 3<<19, Records: 7}
	got := r.summaryAt(time.Now())
	want := "commitlog: 2 files of 1.0 GiB, offsets 1073741824..1075314688 (1.5 MiB), 7 records"
	if !strings.Contains(got, want) {
		t.Fatalf("summary:\n%s\nwant\n%s", got, want)
	}
}
