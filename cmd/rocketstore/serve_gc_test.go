package main

import (
	"runtime/debug"
	"testing"
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
