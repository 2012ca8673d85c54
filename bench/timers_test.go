package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestTimersWorkload: the timer workload delivers every timer once and
// none early, and its report says so (its lateness is a measurement,
// not checked here).
func TestTimersWorkload(t *testing.T) {
	rep, err := Timers(context.Background(), TimerOptions{Count: 300, Window: 2500 * time.Millisecond, PrecisionMs: 100, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 300 || rep.Missing != 0 || rep.Early != 0 || rep.Twice != 0 || rep.PeakPending == 0 {
		t.Fatalf("%+v", rep)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| all delivered | yes (300 of 300; 0 missing) |") {
		t.Fatalf("report:\n%s", md.String())
	}
}

// TestTimersPendingWorkload: the pending-timers workload counts every
// timer pending, and again after a restart.
func TestTimersPendingWorkload(t *testing.T) {
	rep, err := TimersPending(context.Background(), 500, time.Hour, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stats.Pending != 500 || rep.PendingAfter != 500 {
		t.Fatalf("%+v", rep)
	}
}
