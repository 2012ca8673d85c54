// Package clocks holds the few conversions between a clockwork.Clock, the
// one clock abstraction of the project, and the millisecond timestamps the
// store writes. Every service takes a clockwork.Clock (nil: the wall
// clock), so that one fake clock given at the top drives a whole broker or
// server in a test.
package clocks

import (
	"reflect"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// wallType is the type of clockwork's real clock.
var wallType = reflect.TypeOf(clockwork.NewRealClock())

// wall is the process's one wall-clock reader: the store that stamps a
// record and the services that compare its stamp with the time (a delay
// level, a timer, an invisible time) read the same milliseconds.
var wall = wallMillis()

// Or returns c, or the wall clock when c is nil.
func Or(c clockwork.Clock) clockwork.Clock {
	if c == nil {
		return clockwork.NewRealClock()
	}
	return c
}

// Millis returns a reader of c in milliseconds since the epoch. For the
// wall clock (c nil or clockwork's real clock) it is the process's one
// fast reader (wallMillis), shared by every caller; any other clock is
// read through its Now.
func Millis(c clockwork.Clock) func() int64 {
	if c == nil || reflect.TypeOf(c) == wallType {
		return wall
	}
	return func() int64 { return c.Now().UnixMilli() }
}

// wallMillis returns wall-clock milliseconds read with one monotonic clock
// read per call. time.Now reads both the wall and the monotonic clocks,
// and on virtual machines each read can cost 100+ ns: on the put path (a
// store timestamp per message) that was 9-13 % of a 128-byte put. The wall
// clock is read again at most once a second, so a wall-clock step (NTP)
// shows within a second, as it would in System.currentTimeMillis.
func wallMillis() func() int64 {
	type anchor struct {
		mono time.Time // carries the monotonic reading
		ns   int64     // wall-clock ns at mono
	}
	var cur atomic.Pointer[anchor]
	now := time.Now()
	cur.Store(&anchor{now, now.UnixNano()})
	return func() int64 {
		a := cur.Load()
		d := time.Since(a.mono)
		if d < 0 || d >= time.Second {
			t := time.Now()
			cur.Store(&anchor{t, t.UnixNano()})
			return t.UnixMilli()
		}
		// In nanoseconds, so that the result is time.Now().UnixMilli()
		// at the same instant, not up to a millisecond behind it.
		return (a.ns + int64(d)) / int64(time.Millisecond)
	}
}
