package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/engine"
)

// syncSlices is the number of slices a sync-flush put run and its bound
// alternate in. fdatasync's latency is the disk's: on a machine whose disk
// other processes also write, it moves by 2-3x from one second to the
// next, and a bound measured after the workload compared the workload with
// a different disk (ratios from 21 % to 284 % in one afternoon).
// Alternating slices put both under the same conditions.
const syncSlices = 6

// syncBoundFileSize is the preallocated size of the bound's file; the bound
// stops early (and says so in its duration) if it fills it.
const syncBoundFileSize = 256 << 20

// syncPut runs the sync-flush put workload on mmap beside its bound,
// write+fdatasync of chunks of the batch size the group commit reached,
// alternating SyncTime/syncSlices slices of each. Each bound slice writes
// the batch size of the workload slice just before it: group commit
// batches change as a run goes on, and a bound held at the first slice's
// batch paid more (or fewer) syncs per byte than the workload did.
func (e env) syncPut(ctx context.Context, body, producers, msgs int) (Result, error) {
	stub := Result{Group: GroupPut, Backend: Mmap, Body: body, Producers: producers, Flush: FlushName(engine.SyncFlush)}
	bs, err := e.openStore(Mmap, e.storeConfig(engine.SyncFlush))
	if err != nil {
		return stub, err
	}
	defer bs.remove()
	if err := warmQueues(ctx, bs, body, producers); err != nil {
		return stub, err
	}
	per := (msgs + producers - 1) / producers
	slice := e.spec.SyncTime / syncSlices
	var (
		n, logBytes int64
		elapsed     time.Duration
		fb          *fdatasyncFile
		syncs, sb   int64 // the CommitLog's syncs and bytes synced so far
	)
	if fb, err = e.openFdatasync(); err != nil {
		return stub, err
	}
	defer fb.close()
	for i := 0; i < syncSlices; i++ {
		if err := fb.settle(); err != nil {
			return stub, err
		}
		// A sync put takes a disk round trip, so the clock is read
		// after every one: slices end on time.
		sn, sl, se, err := runProducers(ctx, bs, body, producers, per, 1, slice)
		if err != nil {
			return stub, err
		}
		n, logBytes, elapsed = n+sn, logBytes+sl, elapsed+se
		ds, db := bs.syncs.syncs.Load()-syncs, bs.syncs.bytes.Load()-sb
		syncs, sb = syncs+ds, sb+db
		if ds == 0 {
			return stub, fmt.Errorf("bench: no CommitLog sync in slice %d (%v) of a sync-flush run", i+1, slice)
		}
		batch := int(float64(db)/float64(ds) + 0.5)
		if err := fb.settle(); err != nil {
			return stub, err
		}
		if err := fb.run(slice, batch); err != nil {
			return stub, err
		}
	}
	r := bs.putRun(Mmap, body, producers, engine.SyncFlush, n, logBytes, elapsed)
	b := fb.bound(r.recSize)
	b.Note = fmt.Sprintf("engine: %.0f syncs/s of %s; %d alternating slices", r.syncsPerSec, byteSize(int(r.syncBatch)), syncSlices)
	b.Ratio = r.MsgsPerS / b.MsgsPerS
	r.Bound = &b
	return r.Result, nil
}

// fdatasyncFile is the bound of a sync-flush put: batch-byte chunks
// written to a preallocated file, each followed by fdatasync.
type fdatasyncFile struct {
	dir string
	f   *os.File
	buf []byte
	// off is where the next chunk goes; ready is how far the file is
	// written with zeros and synced (untimed, see run).
	off, ready int64
	// written and elapsed are the timed bytes and time over every slice.
	written int64
	elapsed time.Duration
	// chunks counts the timed chunks, to report their mean size.
	chunks int64
	// lastSlice is the bytes the last slice wrote, in chunks of
	// lastBatch: what run prepares for the next one.
	lastSlice int64
	lastBatch int
}

// openFdatasync creates the bound's file, preallocated like a CommitLog
// file.
func (e env) openFdatasync() (*fdatasyncFile, error) {
	dir, err := e.tempDir("fdatasync")
	if err != nil {
		return nil, err
	}
	fb := &fdatasyncFile{dir: dir}
	if fb.f, err = os.OpenFile(filepath.Join(dir, "fdatasync"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		if err = unix.Fallocate(int(fb.f.Fd()), 0, 0, syncBoundFileSize); err != nil {
			err = fmt.Errorf("fallocate: %w", err)
		}
	}
	if err != nil {
		fb.close()
		return nil, err
	}
	return fb, nil
}

// settle writes out everything dirty on the file system of the bound's
// file, which is the store's (syncfs), untimed, before each slice: the
// workload and its bound share the file system's journal, and a slice
// whose first syncs wrote out what the other left dirty (the store's
// prefaulted pages, the bound's last chunks) paid for it.
func (fb *fdatasyncFile) settle() error {
	if err := unix.Syncfs(int(fb.f.Fd())); err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	return nil
}

// prepare writes zeros up to end (at most the file's size) and syncs
// them, untimed. The store's CommitLog is written ahead of its data the
// same way (its mapping is write-prefaulted a window ahead, and those
// pages reach the disk in the background), so its syncs overwrite
// written blocks; a bound that synced into unwritten extents also paid
// their conversion (5 % slower on ext4 here, measured with 233-byte
// syncs).
func (fb *fdatasyncFile) prepare(end int64) error {
	end = min(roundUp(end, 4096), syncBoundFileSize)
	if end <= fb.ready {
		return nil
	}
	zeros := make([]byte, 1<<20)
	for pos := fb.ready; pos < end; pos += int64(len(zeros)) {
		if _, err := fb.f.WriteAt(zeros[:min(int64(len(zeros)), end-pos)], pos); err != nil {
			return err
		}
	}
	if err := unix.Fdatasync(int(fb.f.Fd())); err != nil {
		return err
	}
	fb.ready = end
	return nil
}

// run writes and syncs batch-byte chunks for d (at least one), on a
// range prepared beforehand: twice what the last slice wrote, at least
// 4 MiB. A slice that reaches the prepared end or the file's stops there;
// its rate stays right, since bytes and time are both counted.
func (fb *fdatasyncFile) run(d time.Duration, batch int) error {
	if len(fb.buf) != batch {
		fb.buf = make([]byte, batch)
		for i := range fb.buf {
			fb.buf[i] = byte(i)
		}
	}
	// The last slice's bytes at this slice's batch size: slices are
	// equally long and a sync takes about as long whatever its size.
	want := int64(4 << 20)
	if fb.lastBatch > 0 {
		want = max(want, 2*fb.lastSlice*int64(batch)/int64(fb.lastBatch))
	}
	if err := fb.prepare(fb.off + want); err != nil {
		return err
	}
	from := fb.off
	defer func() { fb.lastSlice, fb.lastBatch = fb.off-from, batch }()
	start := time.Now()
	deadline := start.Add(d)
	for first := true; fb.off+int64(batch) <= fb.ready && (first || time.Now().Before(deadline)); first = false {
		if _, err := fb.f.WriteAt(fb.buf, fb.off); err != nil {
			return err
		}
		if err := unix.Fdatasync(int(fb.f.Fd())); err != nil {
			return err
		}
		fb.off += int64(batch)
		fb.written += int64(batch)
		fb.chunks++
	}
	fb.elapsed += time.Since(start)
	return nil
}

// bound reports the slices run so far in records of recSize bytes.
func (fb *fdatasyncFile) bound(recSize int) Bound {
	mean := 0
	if fb.chunks > 0 {
		mean = int(fb.written / fb.chunks)
	}
	return boundOf(fmt.Sprintf("write+fdatasync, %s batches", byteSize(mean)),
		fb.written/int64(max(recSize, 1)), fb.written, fb.elapsed)
}

// close removes the bound's file; nil-safe.
func (fb *fdatasyncFile) close() {
	if fb == nil {
		return
	}
	if fb.f != nil {
		fb.f.Close()
	}
	os.RemoveAll(fb.dir)
}
