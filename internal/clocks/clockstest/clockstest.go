// Package clockstest holds the one test clock that clockwork does not
// provide: a fake clock that moves on by itself at every read, for tests
// that need every record's store time to differ.
package clockstest

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Stepping is a clockwork.FakeClock whose every Now first advances it by
// Step, so that successive reads differ as successive records' store
// times do on a real clock. Its timers, tickers and Advance are the fake
// clock's.
type Stepping struct {
	*clockwork.FakeClock
	step time.Duration
	mu   sync.Mutex // makes advance-then-read one step
}

// NewStepping returns a Stepping clock at start that advances step at
// every read.
func NewStepping(start time.Time, step time.Duration) *Stepping {
	return &Stepping{FakeClock: clockwork.NewFakeClockAt(start), step: step}
}

// Now advances the clock by its step and returns the new time.
func (c *Stepping) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.FakeClock.Advance(c.step)
	return c.FakeClock.Now()
}

// Split is a clock whose time and whose timers come from two clocks: Now,
// Since and Until read a fake time that only Advance moves, while
// timers, tickers, After and Sleep are those of Timers. A test uses it to
// step the time a service compares with while the service's waits run
// on a clock of their own (the wall clock, or a fake clock the test never
// advances, so that the service steps only when the test wakes it).
type Split struct {
	clockwork.Clock // the timers
	time            *clockwork.FakeClock
}

// NewSplit returns a Split clock at start whose timers are timers'.
func NewSplit(start time.Time, timers clockwork.Clock) *Split {
	return &Split{Clock: timers, time: clockwork.NewFakeClockAt(start)}
}

// Now returns the fake time.
func (c *Split) Now() time.Time { return c.time.Now() }

// Since returns the fake time elapsed since t.
func (c *Split) Since(t time.Time) time.Duration { return c.time.Since(t) }

// Until returns the fake time left until t.
func (c *Split) Until(t time.Time) time.Duration { return c.time.Until(t) }

// Advance moves the fake time on by d; the timers' clock does not move.
func (c *Split) Advance(d time.Duration) { c.time.Advance(d) }
