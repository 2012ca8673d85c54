package main

import (
	"os"
	"runtime/debug"

	"github.com/rocketstore/rocketstore/remoting"
)

// serveGCPercent is the garbage collector's target for `serve` when the
// GOGC environment variable does not set one. A broker's live heap is
// small (tens of MB: topic and offset tables, buffers) while every request
// allocates a little, so with Go's default of 100 the collector ran many
// times a second and the runtime kept returning freed pages to the kernel
// and faulting them back: `bench --server` (128 B, 4 × 256 in flight)
// measured 25-28 µs of server CPU per message at GOGC=100 against 17-19 µs
// at 400, side by side on a shared 2-core machine. 400 lets the heap grow
// to five times the live data before a cycle, a few hundred MB at most for
// a busy broker.
const serveGCPercent = 400

// setServeGC applies serveGCPercent unless GOGC is set, and returns the
// percentage now in effect.
func setServeGC() int {
	if v, ok := os.LookupEnv("GOGC"); ok && v != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(serveGCPercent)
	return serveGCPercent
}

// serveHeapHeadroom is what serve's soft memory limit allows beyond the
// receive budget: the broker's own live data (tables, buffers) and the
// garbage between two collections. A broker's live heap is tens of MB.
const serveHeapHeadroom = 128 << 20

// setServeMemoryLimit sets the runtime's soft memory limit to the receive
// budget (receiveBytes, the most incoming frames hold at once; 0 means
// remoting's default) plus serveHeapHeadroom, unless GOMEMLIMIT is set,
// which wins. It returns the limit in effect.
//
// With GOGC at serveGCPercent, a collection made while peers' frames hold
// the budget sets the next at five times that: rounds of peers that send
// half of a large frame and are closed grew serve's RSS past 0.5 GiB
// though the budget held at most 96 MiB of it at a time. The limit makes
// the collector run before the heap passes it, and costs nothing while
// the heap is small.
func setServeMemoryLimit(receiveBytes int64) int64 {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok && v != "" {
		return debug.SetMemoryLimit(-1)
	}
	if receiveBytes <= 0 {
		receiveBytes = remoting.DefaultMaxReceiveBytes
	}
	limit := receiveBytes + serveHeapHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}
