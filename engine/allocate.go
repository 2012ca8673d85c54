package engine

import (
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/backend"
)

// allocator prepares the next CommitLog file in the background while the
// current one fills (RocketMQ's AllocateMappedFileService), so that rolling
// to a new file costs the put path neither the create nor the page faults
// of a fresh mapping. It also keeps a window just ahead of the write
// position mapped writable (write-prefaulted): puts then copy into pages
// that take no fault, and only that window, not whole 1 GiB files, is made
// resident ahead of use.
//
// The prepared file is created (and its directory synced) like any other,
// but it is not in the queue's file list until the queue takes it: scans,
// flushes and retention never see it. If the process stops first, the
// empty file stays on disk and recovery removes or adopts it like any file
// past the end of the data.
type allocator struct {
	q *mappedFileQueue

	mu      sync.Mutex
	from    int64         // offset of the file being prepared; -1 when none
	done    chan struct{} // closed when mf/err are set
	settled chan struct{} // closed when the goroutine has finished with mf
	mf      *mappedFile
	err     error
	stopped bool
	wg      sync.WaitGroup

	// A preparation of the next file deferred until the writer passes
	// nextAt (prepareNext); pending is false when there is none.
	pending  bool
	nextFrom int64
	nextAt   int64

	// The write-ahead prefaulter: one goroutine, started on first use,
	// populates [ahead.done, ahead.to) of ahead.mf.
	ahead struct {
		mf      *mappedFile
		done    int64 // file position populated up to
		to      int64 // file position to populate up to
		kick    chan struct{}
		started bool
		// window is the current window (aheadWindow); at and atOff
		// are when and at which CommitLog offset the writer last
		// reported its position.
		window int64
		at     time.Time
		atOff  int64
	}
}

// Write-ahead prefault: the window kept populated ahead of the write
// position, and the step by which the put path moves it (a put pays one
// comparison; every prefaultStep bytes it hands the populator a new target).
//
// prefaultWindow is the least window, and the whole window at low rates.
// A fast writer gets prefaultLead of writing ahead of it instead, up to
// maxPrefaultWindow: the populator is a goroutine like any other, and on 2
// busy cores (the putter and the dispatcher do not block at high rates) it
// can wait milliseconds for one, and cold page cache fills slower than the
// writer writes (BENCHMARKS.md, "The machine"). 128-byte puts
// at 2 M/s write 456 MB/s, which crosses 8 MiB in 17 ms. With the fixed
// window the putter of BenchmarkPut/128B/1 took 575-625 page faults in
// 10 M puts (the writer had caught up with the populator), with this one
// 200-250; such a write fault reads around up to 8 MiB of zero pages on
// the put path (this VM's read_ahead_kb), a stall of milliseconds.
const (
	prefaultWindow    = 8 << 20
	maxPrefaultWindow = 64 << 20
	prefaultStep      = 1 << 20
	prefaultLead      = 50 * time.Millisecond
)

// aheadWindow returns the window for a writer that took elapsed to write
// the last prefaultStep bytes, given the window in use: the bytes it
// writes in prefaultLead, within [prefaultWindow, maxPrefaultWindow] and
// in whole steps. It shrinks by at most one step a step, so that one slow
// step (a writer descheduled for a moment) does not drop a window the
// populator has already filled.
func aheadWindow(elapsed time.Duration, cur int64) int64 {
	w := int64(maxPrefaultWindow)
	if elapsed > 0 {
		w = int64(float64(prefaultStep) * float64(prefaultLead) / float64(elapsed))
	}
	w = min(max(w, cur-prefaultStep, prefaultWindow), maxPrefaultWindow)
	return w &^ (prefaultStep - 1)
}

func newAllocator(q *mappedFileQueue) *allocator { return &allocator{q: q, from: -1} }

// prepareNext arranges for the file after mf, which the writer has just
// taken, to be prepared once the writer is half way through mf (the put
// path reports its progress through prefaultAhead). Preparing it at once,
// as RocketMQ's AllocateMappedFileService does, puts the creation of a
// 1 GiB file, its directory sync and the population of its first window
// (25-35 ms of system calls here) beside the first puts of a fresh store,
// when every core is busy with them; half a file later it is long ready
// when needed. Files too small for the put path to report half-way points
// (fewer than four prefault steps) are prepared at once.
func (a *allocator) prepareNext(mf *mappedFile) {
	next := mf.fileFromOffset + mf.fileSize
	if mf.fileSize < 4*prefaultStep {
		a.prepare(next)
		return
	}
	a.mu.Lock()
	if !a.stopped {
		a.pending, a.nextFrom, a.nextAt = true, next, mf.fileFromOffset+mf.fileSize/2
	}
	a.mu.Unlock()
}

// prefaultAhead asks for [pos, pos+prefaultWindow) of mf to be populated
// for writing, in the background, and starts a deferred preparation of
// the next file once pos has passed its mark (prepareNext). It never
// blocks.
func (a *allocator) prefaultAhead(mf *mappedFile, pos int64) {
	a.mu.Lock()
	due := a.pending && !a.stopped && mf.fileFromOffset+pos >= a.nextAt
	if due {
		a.pending = false
	}
	next := a.nextFrom
	a.mu.Unlock()
	if due {
		a.prepare(next)
	}
	if !mf.canPrefaultAhead() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	if a.ahead.mf != mf {
		a.ahead.mf, a.ahead.done, a.ahead.to = mf, pos, 0
	}
	a.sizeWindow(mf.fileFromOffset + pos)
	// Pages behind the writer are already faulted: skip them when the
	// populator lags.
	a.ahead.done = max(a.ahead.done, pos)
	a.ahead.to = min(max(a.ahead.to, pos+a.ahead.window), mf.fileSize)
	if !a.ahead.started {
		a.ahead.started = true
		a.ahead.kick = make(chan struct{}, 1)
		a.wg.Add(1)
		go a.prefaultLoop()
	}
	select {
	case a.ahead.kick <- struct{}{}:
	default:
	}
}

// sizeWindow sets the window from the writer's rate since its last report
// (at CommitLog offset off now). The put path reports once a step, so this
// reads the clock once per prefaultStep bytes written. The caller holds
// a.mu.
func (a *allocator) sizeWindow(off int64) {
	now := time.Now()
	if a.ahead.window == 0 || a.ahead.at.IsZero() || off <= a.ahead.atOff {
		a.ahead.window = max(a.ahead.window, prefaultWindow)
	} else {
		// Per step: a report may come after more than one step's bytes.
		d := time.Duration(float64(now.Sub(a.ahead.at)) * prefaultStep / float64(off-a.ahead.atOff))
		a.ahead.window = aheadWindow(d, a.ahead.window)
	}
	a.ahead.at, a.ahead.atOff = now, off
}

// prefaultLoop populates the requested window step by step until stop.
func (a *allocator) prefaultLoop() {
	defer a.wg.Done()
	for range a.ahead.kick {
		for {
			a.mu.Lock()
			mf, from, to, stopped := a.ahead.mf, a.ahead.done, a.ahead.to, a.stopped
			if stopped || from >= to || !mf.hold() {
				a.mu.Unlock()
				break
			}
			n := min(to-from, prefaultStep)
			a.ahead.done = from + n
			a.mu.Unlock()
			// An optimisation only: failure costs speed, not data.
			_ = mf.prefaultAhead(from, n)
			mf.release()
		}
		a.mu.Lock()
		stopped := a.stopped
		a.mu.Unlock()
		if stopped {
			return
		}
	}
}

// canPrefaultAhead reports whether mf's segment can populate pages ahead
// of the writer in the way mf is written (prefaultAhead).
func (mf *mappedFile) canPrefaultAhead() bool {
	if mf.pw != nil {
		_, ok := mf.seg.(backend.ReadPrefaulter)
		return ok
	}
	_, ok := mf.seg.(backend.WritePrefaulter)
	return ok
}

// prefaultAhead populates [off, off+n) of mf ahead of the writer. A file
// written through its mapping gets its pages mapped writable, so that the
// copies take no fault. A file written with Pwrite gets them mapped
// read-only instead: a page mapped writable would cost the first sync
// after a write to it a TLB shootdown, which is what Pwrite avoids, while
// read-only mappings of (zero) page-cache pages cost nothing at writeback,
// spare pwrite the page allocation and spare the dispatcher, which reads
// through the mapping, a fault per page.
func (mf *mappedFile) prefaultAhead(off, n int64) error {
	if mf.pw != nil {
		if p, ok := mf.seg.(backend.ReadPrefaulter); ok {
			return p.PrefaultRead(off, n)
		}
		return nil
	}
	if p, ok := mf.seg.(backend.WritePrefaulter); ok {
		return p.PrefaultWrite(off, n)
	}
	return nil
}

// prepare starts creating the file at from unless it is already under way.
func (a *allocator) prepare(from int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending && a.nextFrom <= from {
		a.pending = false // superseded, or started early
	}
	if a.stopped || a.from == from {
		return
	}
	a.discardLocked()
	done, settled := make(chan struct{}), make(chan struct{})
	a.from, a.done, a.settled, a.mf, a.err = from, done, settled, nil, nil
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(settled)
		mf, err := a.q.create(from)
		a.mu.Lock()
		superseded := a.done != done
		if !superseded {
			a.mf, a.err = mf, err
		} else if mf != nil {
			mf.shutdown() // superseded while it was being made
		}
		a.mu.Unlock()
		close(done)
		// Populate the first window after handing the file over: a put
		// that needs the file now never waits for it, and pages it writes
		// first are simply faulted by the writer. stop waits for this, so
		// the segment is never unmapped under it.
		if err == nil && !superseded {
			_ = mf.prefaultAhead(0, prefaultWindow)
		}
	}()
}

// prepareFirst prepares an empty queue's first file (offset 0, where the
// CommitLog's getLastMappedFile starts an empty log) at start, as the
// next file is prepared on each roll: the first put then takes it instead
// of creating the file, syncing its directories and faulting in its first
// pages while every other put waits on the CommitLog's lock (35 ms at the
// start of a bench --server run on a 2-core VM; see BENCHMARKS.md). A store closed before any put removes it again (stop).
func (a *allocator) prepareFirst() { a.prepare(0) }

// take returns the prepared file at from, waiting for it if it is still
// being made, or nil when none was prepared there (or preparing failed:
// the caller then creates it itself and reports that error if it recurs).
func (a *allocator) take(from int64) *mappedFile {
	a.mu.Lock()
	if a.from != from {
		a.mu.Unlock()
		return nil
	}
	done := a.done
	a.mu.Unlock()
	<-done
	a.mu.Lock()
	defer a.mu.Unlock()
	mf := a.mf
	a.from, a.done, a.settled, a.mf, a.err = -1, nil, nil, nil, nil
	return mf
}

// discardLocked drops a prepared file nobody took, once its goroutine is
// done with it (it may still be prefaulting); its file stays on disk.
func (a *allocator) discardLocked() {
	// Before the hand-over (mf unset) the goroutine needs a.mu and will
	// find itself superseded and close what it made; after it, the
	// goroutine takes no lock, so waiting here cannot deadlock.
	if a.mf != nil {
		<-a.settled
		a.mf.shutdown()
	}
	a.from, a.done, a.settled, a.mf, a.err = -1, nil, nil, nil, nil
}

// stop waits for a preparation in flight and removes a prepared file
// nobody took: it was never written, and left behind it would only cost
// the next recovery a scan of its (zero) pages.
func (a *allocator) stop() {
	a.mu.Lock()
	a.stopped = true
	if a.ahead.started {
		close(a.ahead.kick)
	}
	a.ahead.mf = nil
	a.mu.Unlock()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	mf := a.mf
	a.discardLocked()
	if mf == nil {
		return
	}
	if err := a.q.fs.Remove(mf.name); err != nil {
		return // harmless: recovery treats it as any file past the end
	}
	_ = a.q.fs.SyncDir(a.q.dir)
}
