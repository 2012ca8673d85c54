package main

import (
	"runtime/debug"
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
)

// TestServeGC: serve raises the GC target unless GOGC is set, which wins.
func TestServeGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	t.Setenv("GOGC", "")
	if got := setServeGC(); got != serveGCPercent || debug.SetGCPercent(100) != serveGCPercent {
		t.Fatalf("without GOGC: %d, want %d", got, serveGCPercent)
	}
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // as the runtime read it at start
	if got := setServeGC(); got != 150 || debug.SetGCPercent(100) != 150 {
		t.Fatalf("with GOGC=150: %d", got)
	}
}

// TestServeMemoryLimit: serve's soft memory limit is the receive budget
// plus serveHeapHeadroom unless GOMEMLIMIT is set, which wins.
func TestServeMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct{ budget, want int64 }{
		{0, remoting.DefaultMaxReceiveBytes + serveHeapHeadroom},
		{64 << 20, 64<<20 + serveHeapHeadroom},
	} {
		if got := setServeMemoryLimit(c.budget); got != c.want || debug.SetMemoryLimit(-1) != c.want {
			t.Fatalf("budget %d: limit %d, want %d", c.budget, got, c.want)
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30) // as the runtime read it at start
	if got := setServeMemoryLimit(0); got != 1<<30 || debug.SetMemoryLimit(-1) != 1<<30 {
		t.Fatalf("with GOMEMLIMIT=1GiB: %d", got)
	}
}
