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
// this project's VM and 0.2 ms with the hint, and later units' faults cost
// about the same either way. A hint only: failure costs speed, not data.
// Only this process's mapping is affected; a restart maps files afresh.
func adviseNoReadAround(seg backend.Segment) {
	if a, ok := seg.(adviser); ok {
		_ = a.Advise(unix.MADV_RANDOM)
	}
}

// rangeAdviser is implemented by segments that take madvise(2) hints for
// part of their mapping (the mmap backend's).
type rangeAdviser interface {
	AdviseRange(off, n int64, advice int) error
}

// adviseHugePages asks for the pages of [off, off+n) of seg's mapping,
// rounded out to whole huge pages, to be backed by huge pages
// (MADV_HUGEPAGE): the page cache the write-ahead prefault creates there
// then comes in 2 MiB folios mapped by one page-table entry each, where
// the kernel otherwise grows the folios of a sequential write a few
// orders at a time and maps most of them page by page. On this project's
// PVM guest every page-table entry costs a shadow-page fill the first time
// it is used: 4 KiB puts from one goroutine took 0.72-1.02 µs with the
// hint against 1.7-2.6 µs without (BENCHMARKS.md, "Huge pages ahead of a
// fast writer"). The allocator gives it only for a fast writer: a folio
// mapped writable is dirtied whole, so each flush writes back the whole
// 2 MiB folio holding the write position, which a slow writer pays many
// times over (38x the data at 100 1 KiB puts a second). It reports whether
// the hint was taken; failure costs speed, not data.
func adviseHugePages(seg backend.Segment, off, n int64) bool {
	a, ok := seg.(rangeAdviser)
	if !ok || n <= 0 {
		return false
	}
	start := off &^ (hugePageSize - 1)
	end := (off + n + hugePageSize - 1) &^ (hugePageSize - 1)
	return a.AdviseRange(start, end-start, unix.MADV_HUGEPAGE) == nil
}
