package engine

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
)

// osPageSize is the flush granularity RocketMQ counts least-pages in.
const osPageSize = 4096

// fileNameDigits is the width of a segment name: the zero-padded offset of
// the file's first byte in its queue (RocketMQ's UtilAll.offset2FileName).
const fileNameDigits = 20

func offsetToFileName(off int64) string {
	s := strconv.FormatInt(off, 10)
	const zeros = "00000000000000000000"
	return zeros[:fileNameDigits-len(s)] + s
}

func fileNameToOffset(name string) (int64, error) {
	if len(name) != fileNameDigits {
		return 0, fmt.Errorf("%w: file name %q is not %d digits", ErrCorruptStore, name, fileNameDigits)
	}
	off, err := strconv.ParseInt(name, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("%w: file name %q is not an offset", ErrCorruptStore, name)
	}
	return off, nil
}

// mappedFile is one segment of a mappedFileQueue: a fixed-size file whose
// first byte sits at fileFromOffset in the queue's offset space.
//
// Invariant: flushed <= wrote <= fileSize. Bytes below wrote are immutable
// until the file is truncated by recovery, so readers may use views below a
// wrote value they loaded without any lock. RocketMQ also keeps a committed
// position for its transient store pool (a write buffer committed to the
// file); there is no such pool here, so its committed position is always
// the wrote position and is not stored (CommittedPosition).
type mappedFile struct {
	seg            backend.Segment
	name           string // full path within the FS
	fileFromOffset int64
	fileSize       int64
	// noRedirty is the NoRedirty hook (tests only).
	noRedirty bool
	// pw, when set, writes appends with pwrite instead of a copy into the
	// mapping (the CommitLog under SYNC_FLUSH: see backend.Pwriter). iov
	// passes a record's pieces to it without an allocation; only the
	// appender, under the CommitLog's lock, uses it.
	pw  backend.Pwriter
	iov [4][]byte
	// ahead, when set, write-populates the pages just ahead of the
	// appends, a batch per system call, for a file written through its
	// mapping without read-around (the ConsumeQueues: see
	// writeAheadInline); aheadTo is the file position populated up to.
	// Only the appender touches them.
	ahead   backend.WritePrefaulter
	aheadTo int64

	wrote   atomic.Int64
	flushed atomic.Int64
	// storeTimestamp is the store time of the last message appended; it is
	// set after wrote, so a flusher that reads it first and wrote second
	// always flushes that message (the checkpoint relies on it).
	storeTimestamp atomic.Int64

	// refs counts the owner (1 while available) plus each reader holding a
	// view; the segment is closed when it drops to zero, so that a segment
	// is never unmapped under a reader (RocketMQ's ReferenceResource).
	refs      atomic.Int64
	available atomic.Bool
	closeErr  error
}

func newMappedFile(seg backend.Segment, name string, from int64) *mappedFile {
	mf := &mappedFile{seg: seg, name: name, fileFromOffset: from, fileSize: seg.Size()}
	mf.refs.Store(1)
	mf.available.Store(true)
	return mf
}

// FileFromOffset returns the queue offset of the file's first byte.
func (mf *mappedFile) FileFromOffset() int64 { return mf.fileFromOffset }

// FileSize returns the fixed size of the file.
func (mf *mappedFile) FileSize() int64 { return mf.fileSize }

// Name returns the file's path within the FS.
func (mf *mappedFile) Name() string { return mf.name }

// WrotePosition returns the number of bytes appended (file-relative).
func (mf *mappedFile) WrotePosition() int64 { return mf.wrote.Load() }

// CommittedPosition returns RocketMQ's committed position, which without a
// transient store pool is the wrote position.
func (mf *mappedFile) CommittedPosition() int64 { return mf.wrote.Load() }

// FlushedPosition returns the number of bytes synced (file-relative).
func (mf *mappedFile) FlushedPosition() int64 { return mf.flushed.Load() }

// IsFull reports whether nothing more can be appended.
func (mf *mappedFile) IsFull() bool { return mf.wrote.Load() == mf.fileSize }

func (mf *mappedFile) setPositions(p int64) {
	mf.wrote.Store(p)
	mf.flushed.Store(p)
}

// hold takes a reader reference; it fails once the file is being destroyed.
func (mf *mappedFile) hold() bool {
	for {
		n := mf.refs.Load()
		if n <= 0 || !mf.available.Load() {
			return false
		}
		if mf.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and closes the segment after the last one.
func (mf *mappedFile) release() {
	if mf.refs.Add(-1) == 0 {
		mf.closeErr = mf.seg.Close()
	}
}

// shutdown drops the owner's reference: the segment closes once the last
// reader has released it.
func (mf *mappedFile) shutdown() {
	if mf.available.CompareAndSwap(true, false) {
		mf.release()
	}
}

// appendAt writes the pieces of one record at the current wrote position.
// The caller holds the queue's append lock and publishes the new position
// with publish once every record of the put is in place.
func (mf *mappedFile) appendAt(pos int64, pieces ...[]byte) (int64, error) {
	if mf.pw != nil {
		return mf.pwriteAt(pos, pieces)
	}
	if mf.ahead != nil && pos >= mf.aheadTo {
		mf.writeAheadInline(pos)
	}
	for _, p := range pieces {
		if len(p) == 0 {
			continue
		}
		if _, err := mf.seg.WriteAt(p, pos); err != nil {
			return pos, fmt.Errorf("write %s at %d: %w", mf.name, pos, err)
		}
		pos += int64(len(p))
	}
	return pos, nil
}

// Inline write-ahead of files without read-around. Every page of such a
// file costs its writer a fault on first write: 20-25 µs each on this
// project's VM, where page faults trap to the hypervisor, and for the
// ConsumeQueues, 20 bytes a message, the dispatcher's largest cost
// (13.7 % of all CPU in BenchmarkPut/128B/1). MADV_POPULATE_WRITE maps a
// batch of pages in one system call, without a fault each: the page
// faults of 5 M such puts fell from 25 k (95 % of them the ConsumeQueue's)
// to 2 k. The batch
// grows with what the file has taken (at most writeAheadMax ahead), so
// that the many queues a broker holds, most of them quiet, keep at most
// a few pages each populated ahead of their data.
const writeAheadMax = 64 << 10

// writeAheadInline populates the pages from the one holding pos on,
// before an append at pos. A hint only: failure costs faults, not data.
func (mf *mappedFile) writeAheadInline(pos int64) {
	const page = 4096
	from := pos &^ (page - 1)
	n := min(max(from, page), writeAheadMax, mf.fileSize-from)
	if n <= 0 {
		return
	}
	_ = mf.ahead.PrefaultWrite(from, n)
	mf.aheadTo = from + n
}

// pwriteAt is appendAt through the segment's Pwrite: one system call for
// the pieces of a record (up to len(iov) of them).
func (mf *mappedFile) pwriteAt(pos int64, pieces [][]byte) (int64, error) {
	for len(pieces) > 0 {
		n := copy(mf.iov[:], pieces)
		w, err := mf.pw.Pwrite(mf.iov[:n], pos)
		clear(mf.iov[:n]) // keep no reference to the caller's message
		pos += int64(w)
		if err != nil {
			return pos, fmt.Errorf("write %s at %d: %w", mf.name, pos, err)
		}
		pieces = pieces[n:]
	}
	return pos, nil
}

// publish makes bytes below pos visible to readers.
func (mf *mappedFile) publish(pos int64) {
	mf.wrote.Store(pos)
}

// setStoreTimestamp records the store time of the message just published.
// Store times never go backwards along the log (CommitLog.storeTime), and
// most puts share their millisecond with the one before: those skip the
// atomic store (a locked instruction on every put). A flusher that reads
// the unchanged value has synchronised with the earlier put that stored
// it, which carries the same time, so what it flushes still vouches for
// it.
func (mf *mappedFile) setStoreTimestamp(ts int64) {
	if mf.storeTimestamp.Load() != ts {
		mf.storeTimestamp.Store(ts)
	}
}

// isAbleToFlush applies RocketMQ's least-pages rule.
func (mf *mappedFile) isAbleToFlush(leastPages int) bool {
	flush, write := mf.flushed.Load(), mf.wrote.Load()
	if mf.IsFull() && write > flush {
		return true
	}
	if leastPages > 0 {
		return write/osPageSize-flush/osPageSize >= int64(leastPages)
	}
	return write > flush
}

// flush syncs [flushed, wrote) when the least-pages rule allows and returns
// the flushed position. Unlike RocketMQ (#2706), a failed sync does not
// advance the flushed position: the error is returned and the caller turns
// the store read-only.
func (mf *mappedFile) flush(leastPages int) (int64, error) {
	if !mf.isAbleToFlush(leastPages) || !mf.hold() {
		return mf.flushed.Load(), nil
	}
	defer mf.release()
	from, to := mf.flushed.Load(), mf.wrote.Load()
	if err := mf.seg.Sync(from, to-from); err != nil {
		mf.redirty(from, to-from)
		return from, fmt.Errorf("%w: sync %s [%d,%d): %w", ErrFlushFailed, mf.name, from, to, err)
	}
	mf.flushed.Store(to)
	return to, nil
}

// view returns the n bytes at file position pos with a reference held; the
// caller must call release. It fails when the range is not below wrote or
// the file is being destroyed.
func (mf *mappedFile) view(pos, n int64) ([]byte, bool) {
	if pos < 0 || n < 0 || pos+n > mf.wrote.Load() || !mf.hold() {
		return nil, false
	}
	return mf.seg.View(pos, n), true
}

// zeroTail overwrites with zeros every page at or after file position pos
// that holds a non-zero byte, then syncs them. Recovery calls it so that
// stale bytes past the recovered end can never come back as a record after
// a second crash.
func (mf *mappedFile) zeroTail(pos int64) (int, error) {
	var zero [osPageSize]byte
	dirtyFrom, dirtyTo := int64(-1), int64(-1)
	for p := pos; p < mf.fileSize; {
		end := min((p/osPageSize+1)*osPageSize, mf.fileSize)
		if !allZero(mf.seg.View(p, end-p)) {
			if _, err := mf.seg.WriteAt(zero[:end-p], p); err != nil {
				return 0, fmt.Errorf("zero %s at %d: %w", mf.name, p, err)
			}
			if dirtyFrom < 0 {
				dirtyFrom = p
			}
			dirtyTo = end
		}
		p = end
	}
	if dirtyFrom < 0 {
		return 0, nil
	}
	if err := mf.seg.Sync(dirtyFrom, dirtyTo-dirtyFrom); err != nil {
		mf.redirty(dirtyFrom, dirtyTo-dirtyFrom)
		return 0, fmt.Errorf("%w: sync zeroed tail of %s: %w", ErrFlushFailed, mf.name, err)
	}
	return int(dirtyTo - dirtyFrom), nil
}

// redirty writes the n bytes at pos over themselves after a failed sync.
// Linux marks the pages of a failed writeback clean while the disk keeps
// the old content, so no later sync would ever write them: a process that
// opens the store after this one dies would read the new bytes from the
// page cache, sync them (a no-op) and vouch for data the disk does not
// hold. Writing them again makes them dirty, so that the next process's
// recovery sync really writes them. The store is read-only by now; this
// is best effort (a failing write leaves nothing worse).
func (mf *mappedFile) redirty(pos, n int64) {
	if mf.noRedirty {
		return
	}
	if b := mf.seg.View(pos, n); b != nil {
		_, _ = mf.seg.WriteAt(b, pos)
	}
}

func allZero(b []byte) bool {
	for len(b) >= 32 {
		ne := binary.NativeEndian
		if ne.Uint64(b)|ne.Uint64(b[8:])|ne.Uint64(b[16:])|ne.Uint64(b[24:]) != 0 {
			return false
		}
		b = b[32:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
