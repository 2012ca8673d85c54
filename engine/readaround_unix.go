//go:build unix

package engine

import (
	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

// adviser is implemented by segments that take madvise(2) hints for their
// whole mapping (the mmap backend's).
type adviser interface{ Advise(advice int) error }

// adviseNoReadAround tells the kernel not to read around the page a fault
// on seg's mapping needs (MADV_RANDOM). A file written sequentially
// through its mapping otherwise pays, on the first write fault in each
// read-around window, for mapping a window of pages it does not touch yet:
// on a fresh preallocated ConsumeQueue file that fault took 1-1.5 ms on
// a 2-core VM and 0.2 ms with the hint, and later units' faults cost
// about the same either way. A hint only: failure costs speed, not data.
// Only this process's mapping is affected; a restart maps files afresh.
func adviseNoReadAround(seg backend.Segment) {
	if a, ok := seg.(adviser); ok {
		_ = a.Advise(unix.MADV_RANDOM)
	}
}
