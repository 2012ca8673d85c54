package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
)

// syncSlices is the number of slices a sync-flush put run and its bound
// alternate in, each slice itself syncSubSlices shorter turns of each. A
// sync's latency is the disk's: on a machine whose disk other processes
// also write, it moves by 2-3x from one second to the next (one run
// here: 174 to 5365 syncs/s between slices of the same bound), and a
// bound measured after the workload compared the workload with a
// different disk (ratios from 21 % to 284 % in one afternoon).
// Alternating puts both under the same conditions; the ratio is the
// median of the slices', with their min and max, each slice's the ratio
// of its turns' sums.
const syncSlices = 6

// syncSubSlices is the turns of workload and bound in one slice: with
// whole slices of 25-50 ms in turn, the disk of a loaded machine changed
// between the two, and slice ratios ran from 2 % to 98× in one --quick
// run; shorter turns follow it closer.
const syncSubSlices = 5

// syncPut runs the sync-flush put workload on mmap beside its bound,
// pwrite+msync of chunks of the batch size the group commit reached,
// alternating SyncTime/syncSlices/syncSubSlices turns of each. Each bound
// turn writes the batch size of the workload turn just before it: group
// commit batches change as a run goes on, and a bound held at the first
// slice's batch paid more (or fewer) syncs per byte than the workload
// did.
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
	turn := e.spec.SyncTime / syncSlices / syncSubSlices
	var (
		n, logBytes int64
		elapsed     time.Duration
		fb          *syncBoundFile
		syncs, sb   int64 // the CommitLog's syncs and bytes synced so far
		ratios      []float64
	)
	if fb, err = e.openSyncBound(); err != nil {
		return stub, err
	}
	defer fb.close()
	for i := 0; i < syncSlices; i++ {
		var wl, bw int64         // this slice's CommitLog and bound bytes
		var wt, bt time.Duration // and their times
		for range syncSubSlices {
			if err := fb.settle(); err != nil {
				return stub, err
			}
			// A sync put takes a disk round trip, so the clock is read
			// after every one: turns end on time.
			sn, sl, se, err := runProducers(ctx, bs, body, producers, per, 1, turn)
			if err != nil {
				return stub, err
			}
			n, logBytes, elapsed = n+sn, logBytes+sl, elapsed+se
			wl, wt = wl+sl, wt+se
			ds, db := bs.syncs.syncs.Load()-syncs, bs.syncs.bytes.Load()-sb
			syncs, sb = syncs+ds, sb+db
			if ds == 0 {
				return stub, fmt.Errorf("bench: no CommitLog sync in slice %d (%v) of a sync-flush run", i+1, turn)
			}
			batch := int(float64(db)/float64(ds) + 0.5)
			if err := fb.settle(); err != nil {
				return stub, err
			}
			w0, t0 := fb.written, fb.elapsed
			if err := fb.run(turn, batch); err != nil {
				return stub, err
			}
			bw, bt = bw+fb.written-w0, bt+fb.elapsed-t0
		}
		// The slice's ratio, in CommitLog bytes per second.
		if bw > 0 && bt > 0 && wt > 0 {
			ratios = append(ratios, (float64(wl)/wt.Seconds())/(float64(bw)/bt.Seconds()))
		}
	}
	r := bs.putRun(Mmap, body, producers, engine.SyncFlush, n, logBytes, elapsed)
	b := fb.bound(r.recSize)
	b.Note = fmt.Sprintf("engine: %.0f syncs/s of %s; %d slices of %d alternating turns", r.syncsPerSec, byteSize(int(r.syncBatch)), syncSlices, syncSubSlices)
	b.setRatios(ratios)
	r.Bound = &b
	return r.Result, nil
}

// syncBoundFile is the bound of a sync-flush put: the CommitLog's own I/O
// without the store. A file of the mmap backend, created (preallocated)
// as a CommitLog file is and of the same size, its pages mapped read-only
// ahead of the writes as the store's allocator does, and batch-byte
// chunks written with pwrite and each synced with msync of its pages, as
// the store's group commit syncs.
//
// Each of these conditions is the store's because a bound without it
// measured something else: one that wrote zeros ahead and called
// fdatasync met written blocks and another system call, and one whose
// file was 256 MiB beside 64 MiB CommitLog files took 13-43 % longer a
// sync than the store's put at 4 KiB records (ext4 preallocates a large
// file as several unwritten extents, and each sync converts the pages it
// wrote), so that a 4 KiB sync put read 142-240 % of it; with the
// CommitLog's size, the store's puts ran at 0.68-0.91 of its rate in 7 of
// 8 runs of 1,500 puts alternating with 1,500 chunks (1.14 in one).
type syncBoundFile struct {
	dir  string
	size int64
	seg  backend.Segment
	pw   backend.Pwriter
	fsd  *os.File // the directory, for syncfs
	buf  []byte
	// off is where the next chunk goes; ready is how far the pages are
	// mapped ahead (untimed, see run).
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

// openSyncBound creates the bound's file with the mmap backend, of the
// CommitLog's file size. The bound stops early (and says so in its
// duration) if it fills it.
func (e env) openSyncBound() (*syncBoundFile, error) {
	size := e.spec.CommitLogFileSize
	dir, err := e.tempDir("syncbound")
	if err != nil {
		return nil, err
	}
	fb := &syncBoundFile{dir: dir, size: size}
	fs, err := mmap.New(dir)
	if err == nil {
		fb.seg, err = fs.Create("syncbound", size)
	}
	if err == nil {
		var ok bool
		if fb.pw, ok = fb.seg.(backend.Pwriter); !ok {
			err = errors.New("bench: the mmap backend has no pwrite")
		}
	}
	if err == nil {
		fb.fsd, err = os.Open(dir)
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
// whose first syncs wrote out what the other left dirty paid for it.
func (fb *syncBoundFile) settle() error {
	if err := unix.Syncfs(int(fb.fsd.Fd())); err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	return nil
}

// prepare maps the pages up to end (at most the file's size) read-only,
// untimed, as the store's allocator does ahead of its writer.
func (fb *syncBoundFile) prepare(end int64) error {
	end = min(roundUp(end, 4096), fb.size)
	if end <= fb.ready {
		return nil
	}
	if p, ok := fb.seg.(backend.ReadPrefaulter); ok {
		if err := p.PrefaultRead(fb.ready, end-fb.ready); err != nil {
			return err
		}
	}
	fb.ready = end
	return nil
}

// run writes and syncs batch-byte chunks for d (at least one), on a
// range prepared beforehand: twice what the last slice wrote, at least
// 4 MiB. A slice that reaches the prepared end or the file's stops there;
// its rate stays right, since bytes and time are both counted.
func (fb *syncBoundFile) run(d time.Duration, batch int) error {
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
	pieces := [][]byte{fb.buf}
	start := time.Now()
	deadline := start.Add(d)
	for first := true; fb.off+int64(batch) <= fb.ready && (first || time.Now().Before(deadline)); first = false {
		if _, err := fb.pw.Pwrite(pieces, fb.off); err != nil {
			return err
		}
		if err := fb.seg.Sync(fb.off, int64(batch)); err != nil {
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
func (fb *syncBoundFile) bound(recSize int) Bound {
	mean := 0
	if fb.chunks > 0 {
		mean = int(fb.written / fb.chunks)
	}
	return boundOf(fmt.Sprintf("pwrite+msync, %s batches", byteSize(mean)),
		fb.written/int64(max(recSize, 1)), fb.written, fb.elapsed)
}

// close removes the bound's file; nil-safe.
func (fb *syncBoundFile) close() {
	if fb == nil {
		return
	}
	if fb.seg != nil {
		fb.seg.Close()
	}
	if fb.fsd != nil {
		fb.fsd.Close()
	}
	os.RemoveAll(fb.dir)
}
