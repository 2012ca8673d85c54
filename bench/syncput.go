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
// write+fdatasync of chunks of the batch size the group commit reached in
// the first slice, alternating SyncTime/syncSlices slices of each.
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
	)
	defer func() { fb.close() }()
	for i := 0; i < syncSlices; i++ {
		// A sync put takes a disk round trip, so the clock is read
		// after every one: slices end on time.
		sn, sl, se, err := runProducers(ctx, bs, body, producers, per, 1, slice)
		if err != nil {
			return stub, err
		}
		n, logBytes, elapsed = n+sn, logBytes+sl, elapsed+se
		if fb == nil {
			first := bs.putRun(Mmap, body, producers, engine.SyncFlush, n, logBytes, elapsed)
			if first.syncBatch == 0 {
				return stub, fmt.Errorf("bench: no CommitLog sync in the first %v of a sync-flush run", slice)
			}
			if fb, err = e.openFdatasync(int(first.syncBatch + 0.5)); err != nil {
				return stub, err
			}
		}
		if err := fb.run(slice); err != nil {
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
	dir     string
	f       *os.File
	buf     []byte
	off     int64
	elapsed time.Duration
}

// openFdatasync creates the bound's file, preallocated like a CommitLog
// file so that both pay the same unwritten-extent conversion.
func (e env) openFdatasync(batch int) (*fdatasyncFile, error) {
	dir, err := e.tempDir("fdatasync")
	if err != nil {
		return nil, err
	}
	fb := &fdatasyncFile{dir: dir, buf: make([]byte, batch)}
	for i := range fb.buf {
		fb.buf[i] = byte(i)
	}
	if fb.f, err = os.OpenFile(filepath.Join(dir, "fdatasync"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		if err = unix.Fallocate(int(fb.f.Fd()), 0, 0, roundUp(max(syncBoundFileSize, int64(batch)), 4096)); err != nil {
			err = fmt.Errorf("fallocate: %w", err)
		}
	}
	if err != nil {
		fb.close()
		return nil, err
	}
	return fb, nil
}

// run writes and syncs chunks for d (at least one, while the file has
// room).
func (fb *fdatasyncFile) run(d time.Duration) error {
	size := roundUp(max(syncBoundFileSize, int64(len(fb.buf))), 4096)
	start := time.Now()
	deadline := start.Add(d)
	for first := true; fb.off+int64(len(fb.buf)) <= size && (first || time.Now().Before(deadline)); first = false {
		if _, err := fb.f.WriteAt(fb.buf, fb.off); err != nil {
			return err
		}
		if err := unix.Fdatasync(int(fb.f.Fd())); err != nil {
			return err
		}
		fb.off += int64(len(fb.buf))
	}
	fb.elapsed += time.Since(start)
	return nil
}

// bound reports the slices run so far in records of recSize bytes.
func (fb *fdatasyncFile) bound(recSize int) Bound {
	return boundOf(fmt.Sprintf("write+fdatasync, %s batches", byteSize(len(fb.buf))),
		fb.off/int64(max(recSize, 1)), fb.off, fb.elapsed)
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
