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

// Or returns c, or the wall clock when c is nil.
func Or(c clockwork.Clock) clockwork.Clock {
	if c == nil {
		return clockwork.NewRealClock()
	}
	return c
}

// Millis returns a reader of c in milliseconds since the epoch. For the
// wall clock (c nil or clockwork's real clock) it is the fast reader of
// wallMillis; any other clock is read through its Now.
func Millis(c clockwork.Clock) func() int64 {
	if c == nil || reflect.TypeOf(c) == wallType {
		return wallMillis()
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
		ms   int64     // wall-clock ms at mono
	}
	var cur atomic.Pointer[anchor]
	now := time.Now()
	cur.Store(&anchor{now, now.UnixMilli()})
	return func() int64 {
		a := cur.Load()
		d := time.Since(a.mono)
		if d < 0 || d >= time.Second {
			t := time.Now()
			cur.Store(&anchor{t, t.UnixMilli()})
			return t.UnixMilli()
		}
		return a.ms + int64(d/time.Millisecond)
	}
}
