package engine

import (
	"testing"
	"time"
)

// TestAheadWindow checks the write-ahead window's sizing: the least window
// at low rates, prefaultLead of writing at high ones, capped, in whole
// steps, and shrinking by at most one step a step.
func TestAheadWindow(t *testing.T) {
	perStep := func(bytesPerSec float64) time.Duration {
		return time.Duration(float64(prefaultStep) / bytesPerSec * float64(time.Second))
	}
	cases := []struct {
		name    string
		elapsed time.Duration
		cur     int64
		want    int64
	}{
		{"slow writer", perStep(10e6), prefaultWindow, prefaultWindow},
		// 128 B puts at 2 M/s: 456 MB/s, 22.8 MB in 50 ms = 21 whole MiB.
		{"2 M puts/s of 228 B", perStep(456e6), prefaultWindow, 21 << 20},
		{"very fast writer", perStep(10e9), prefaultWindow, maxPrefaultWindow},
		{"no time measured", 0, prefaultWindow, maxPrefaultWindow},
		{"one slow step shrinks by one step", perStep(10e6), 32 << 20, 31 << 20},
		{"never below the least window", perStep(10e6), prefaultWindow + prefaultStep/2, prefaultWindow},
	}
	for _, c := range cases {
		if got := aheadWindow(c.elapsed, c.cur); got != c.want {
			t.Errorf("%s: aheadWindow(%v, %d MiB) = %d MiB (%d), want %d MiB", c.name, c.elapsed, c.cur>>20, got>>20, got, c.want>>20)
		}
	}
}

// TestPrefaultWindowFollowsRate checks that the allocator widens the window
// for a writer that reports its steps quickly and keeps the least window
// for one that does not.
func TestPrefaultWindowFollowsRate(t *testing.T) {
	a := newAllocator(nil)
	a.sizeWindow(0)
	if a.ahead.window != prefaultWindow {
		t.Fatalf("first report: window %d, want %d", a.ahead.window, prefaultWindow)
	}
	// A step reported 0.1 ms after the last: 10 GB/s, beyond the cap.
	a.ahead.at = time.Now().Add(-100 * time.Microsecond)
	a.sizeWindow(prefaultStep)
	if a.ahead.window != maxPrefaultWindow {
		t.Fatalf("fast writer: window %d MiB, want %d MiB", a.ahead.window>>20, maxPrefaultWindow>>20)
	}
	// Then a writer that takes a second a step decays one step a report.
	for i := 2; i < 100; i++ {
		a.ahead.at = time.Now().Add(-time.Second)
		a.sizeWindow(int64(i) * prefaultStep)
	}
	if a.ahead.window != prefaultWindow {
		t.Fatalf("slow writer: window %d MiB, want %d MiB", a.ahead.window>>20, prefaultWindow>>20)
	}
}
