package clockstest

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestSteppingAdvancesAtEveryRead(t *testing.T) {
	c := NewStepping(time.UnixMilli(1000), time.Millisecond)
	if a, b := c.Now().UnixMilli(), c.Now().UnixMilli(); a != 1001 || b != 1002 {
		t.Fatalf("reads %d, %d; want 1001, 1002", a, b)
	}
	c.Advance(time.Second)
	if got := c.Now().UnixMilli(); got != 2003 {
		t.Fatalf("after Advance read %d, want 2003", got)
	}
}

func TestSplitMovesOnlyItsTime(t *testing.T) {
	timers := clockwork.NewFakeClockAt(time.UnixMilli(0))
	c := NewSplit(time.UnixMilli(5000), timers)
	tm := c.NewTimer(time.Millisecond)
	c.Advance(time.Hour)
	if got := c.Now().UnixMilli(); got != 5000+time.Hour.Milliseconds() {
		t.Fatalf("Now %d after Advance", got)
	}
	select {
	case <-tm.Chan():
		t.Fatal("a timer of the timers' clock fired when the time moved")
	default:
	}
	timers.Advance(time.Millisecond)
	<-tm.Chan()
}
