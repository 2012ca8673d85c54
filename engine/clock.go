package engine

import (
	"sync/atomic"
	"time"
)

// wallMillis returns the default Config.Now: wall-clock milliseconds read
// with one monotonic clock read per call. time.Now reads both the wall and
// the monotonic clocks, and on virtual machines each read can cost 100+ ns:
// on the put path (a store timestamp per message) that was 9-13 % of a
// 128-byte put. The wall clock is read again at most once a second, so a
// wall-clock step (NTP) shows within a second, as it would in
// System.currentTimeMillis.
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
