// Package faultlog logs a fault that persists or repeats (a full disk
// refusing every save, a flood of connections) without flooding the log:
// the first failure at its level, then at most one line an interval with
// the count of failures it stands for, and one line when the fault ends.
package faultlog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultInterval is the least time between two lines for one fault.
const DefaultInterval = time.Minute

// Log is the log state of one fault. The zero value is not usable; set
// Logger. It is safe for concurrent use.
type Log struct {
	// Logger receives the lines.
	Logger *slog.Logger
	// Level of the start and repeat lines; the zero value is INFO, so set
	// slog.LevelError or slog.LevelWarn. The end is logged at WARN.
	Level slog.Level
	// Interval between repeat lines; 0 means DefaultInterval.
	Interval time.Duration
	// Clock is the clock; nil means the wall clock.
	Clock clockwork.Clock

	mu         sync.Mutex
	since      time.Time // start of the current fault; zero: none
	lastLog    time.Time
	failures   int64 // since the fault started
	suppressed int64 // since the last line
}

func (l *Log) now() time.Time {
	if l.Clock == nil {
		return time.Now()
	}
	return l.Clock.Now()
}

func (l *Log) interval() time.Duration {
	if l.Interval <= 0 {
		return DefaultInterval
	}
	return l.Interval
}

// Failed counts one failure and logs msg with err and args (key-value
// pairs) if the fault is new or its last line is Interval old; later lines
// carry the failures since the fault began and those not logged since the
// previous line. It reports whether it logged.
func (l *Log) Failed(msg string, err error, args ...any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.failures++
	switch {
	case l.since.IsZero():
		l.since, l.lastLog, l.suppressed = now, now, 0
		l.Logger.Log(context.Background(), l.Level, msg, append(args, "err", err)...)
		return true
	case now.Sub(l.lastLog) >= l.interval():
		l.Logger.Log(context.Background(), l.Level, msg, append(args, "err", err,
			"failingFor", now.Sub(l.since).Round(time.Second), "failures", l.failures, "suppressed", l.suppressed)...)
		l.lastLog, l.suppressed = now, 0
		return true
	}
	l.suppressed++
	return false
}

// Resumed ends the fault: if failures were counted, it logs msg with the
// number of failures and how long the fault lasted, and reports true.
// Without a fault it costs a lock and logs nothing.
func (l *Log) Resumed(msg string, args ...any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		return false
	}
	l.Logger.Warn(msg, append(args, "failures", l.failures, "failedFor", l.now().Sub(l.since).Round(time.Millisecond))...)
	l.since, l.failures, l.suppressed = time.Time{}, 0, 0
	return true
}

// Failing reports whether a fault is in progress.
func (l *Log) Failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.since.IsZero()
}

// Failures returns the failures counted since the fault began (0 without
// a fault).
func (l *Log) Failures() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}
