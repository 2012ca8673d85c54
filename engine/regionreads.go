package engine

import (
	"sync"
	"time"
)

// regionReads chooses how the parsers of one CommitLog file (see
// parseAhead) read its regions when the segment can also read through the
// file (backend.FileReader): through the file's mapping, which copies
// nothing, or with a pread into the batch's buffer.
//
// Neither is always cheaper, and which one is depends on the page cache's
// state, not on anything recovery can ask the kernel. On a 2-core PVM
// virtual machine, reading a 1 GiB CommitLog written minutes before through
// a fresh mapping cost 0.18-0.21 ns a byte in one benchmark run (the copy
// a pread makes is saved) and 0.53-0.63 ns in another, against 0.25-0.49
// ns for pread: each page's first touch through a new mapping takes a
// fault and a page-table update, whose cost on that hypervisor varies with
// the page's history (see BENCHMARKS.md,
// "Recovery"). So recovery measures as it goes.
//
// The file's regions are grouped in epochs of regionReadsEpoch regions,
// and every region of an epoch is read the same way by both parsers:
// mixing the two ways region by region made the mapped regions cost twice
// what they cost in a run of mapped regions, which would teach the choice
// the wrong answer. Each epoch's regions are timed (the read and its
// checks, which are the same work either way). The first epoch is mapped
// and the second read with pread, so that both are measured; from then on
// the epochs use the preferred method, which starts as the mapping and
// changes when the other method's cost is lower by regionReadsSwitch, and
// an epoch now and then (regionReadsProbe) uses the other method, so that
// a change of state is seen. A method's cost is the lower of its last two
// epochs' time per byte.
type regionReads struct {
	mu        sync.Mutex
	last      [2][2]float64 // by readMethod: ns per byte of its last two epochs, newest first
	measured  [2]int        // by readMethod: epochs measured
	epoch     int           // the newest epoch a parser has reached (-1: none)
	method    readMethod    // its method
	prev      readMethod    // the method of the epoch before it
	preferred readMethod    // the method epochs use when they do not probe
	probing   bool          // the current epoch uses the other method
	probeGap  int           // epochs from one probe to the next
	nextProbe int           // the epoch of the next probe
	ns, bytes int64         // the time and bytes measured in it so far
}

// newRegionReads returns the choice for a file's parsers, before any
// epoch.
func newRegionReads() *regionReads {
	return &regionReads{epoch: -1, probeGap: regionReadsProbe, nextProbe: regionReadsProbe}
}

// readMethod is how a parser reads a region.
type readMethod int

const (
	readMapped readMethod = iota // check the records in the file's mapping
	readPread                    // pread the region into the batch's buffer
)

const (
	// regionReadsEpoch is the number of regions (of parseAheadRegion)
	// read the same way: 8 MiB, 128 epochs in a 1 GiB file. The parsers
	// are never more than a few regions apart (each queues at most
	// parseAheadQueued batches), so they are always in the same epoch or
	// in two neighbouring ones.
	regionReadsEpoch = 16
	// regionReadsProbe is how often (in epochs) the parsers read with the
	// method they do not prefer, at first and after each change of
	// preference: one epoch in 8 costs at most an eighth of the
	// difference. Each probe that confirms the preference doubles the
	// gap, up to regionReadsMaxProbe, so that a file where one method
	// costs several times the other (a fresh mapping of old pages) pays
	// the dear one less and less often.
	regionReadsProbe    = 8
	regionReadsMaxProbe = 32
	// regionReadsSwitch is how much cheaper the other method must be
	// for the parsers to change to it: a fifth, so that epochs slowed by
	// the scheduler do not flip the choice back and forth.
	regionReadsSwitch = 1.25
)

// forcedRegionRead, when >= 0, is the readMethod every parser uses: the
// tests run the parsers' read paths one at a time with it. Never set
// outside tests.
var forcedRegionRead readMethod = -1

// next returns the method to read region r (counted from the parsers'
// start) with.
func (c *regionReads) next(r int) readMethod {
	if forcedRegionRead >= 0 {
		return forcedRegionRead
	}
	e := r / regionReadsEpoch
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case e < c.epoch:
		return c.prev // a parser finishing the epoch before
	case e > c.epoch:
		c.begin(e)
	}
	return c.method
}

// begin ends the current epoch, recording its time per byte as its
// method's newest, and starts epoch e with the method it should use.
func (c *regionReads) begin(e int) {
	if c.bytes > 0 {
		x := float64(c.ns) / float64(c.bytes)
		c.last[c.method] = [2]float64{x, c.last[c.method][0]}
		c.measured[c.method]++
	}
	probed := c.probing
	c.epoch, c.prev, c.ns, c.bytes, c.probing = e, c.method, 0, 0, false
	switch other := 1 - c.preferred; {
	case c.measured[readMapped] == 0:
		c.method = readMapped
		return
	case c.measured[readPread] == 0:
		c.method = readPread
		return
	case c.cost(other)*regionReadsSwitch < c.cost(c.preferred):
		c.preferred, c.probeGap, c.nextProbe = other, regionReadsProbe, e+regionReadsProbe
	case probed:
		// The probe confirmed the choice: probe half as often.
		c.probeGap = min(2*c.probeGap, regionReadsMaxProbe)
		c.nextProbe = e - 1 + c.probeGap
	}
	c.method = c.preferred
	if e >= c.nextProbe {
		c.method, c.probing = 1-c.preferred, true
	}
}

// cost returns method m's time per byte: the lower of its last two
// epochs', so that one epoch slowed by something else (the scheduler, a
// first touch of the buffers) does not decide.
func (c *regionReads) cost(m readMethod) float64 {
	if c.measured[m] < 2 {
		return c.last[m][0]
	}
	return min(c.last[m][0], c.last[m][1])
}

// observe records that reading and checking n bytes of region r with
// method m took d. Only the current epoch's regions count: one the other
// parser finishes after its epoch ended is left out.
func (c *regionReads) observe(r int, m readMethod, n int64, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r/regionReadsEpoch == c.epoch && m == c.method {
		c.ns += int64(d)
		c.bytes += n
	}
}
