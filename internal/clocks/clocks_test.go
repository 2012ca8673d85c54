package clocks

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// The wall-clock reader stays within a few ms of time.Now and never runs
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

// Millis reads a fake clock through its Now, so that advancing the clock
// moves the milliseconds; nil and the real clock read the wall clock.
func TestMillisFollowsTheClock(t *testing.T) {
	fc := clockwork.NewFakeClockAt(time.UnixMilli(1_000_000))
	now := Millis(fc)
	if got := now(); got != 1_000_000 {
		t.Fatalf("fake clock read %d, want 1000000", got)
	}
	fc.Advance(1500 * time.Millisecond)
	if got := now(); got != 1_001_500 {
		t.Fatalf("after Advance read %d, want 1001500", got)
	}
	for _, c := range []clockwork.Clock{nil, clockwork.NewRealClock()} {
		before := time.Now().UnixMilli()
		got := Millis(c)()
		if got < before-2 || got > time.Now().UnixMilli()+2 {
			t.Fatalf("Millis(%T) read %d, not the wall clock %d", c, got, before)
		}
	}
	if Or(nil) == nil || Or(fc) != clockwork.Clock(fc) {
		t.Fatal("Or: nil must give the wall clock and a clock itself")
	}
}
