package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
)

// mappedFileQueue is a directory of equal-size mappedFiles that together
// hold one offset space (the CommitLog, or one ConsumeQueue).
//
// The file list is copy-on-write: readers load a snapshot without locking;
// changes (create, truncate, delete) take mu and publish a new slice.
type mappedFileQueue struct {
	fs       backend.FS
	dir      string
	fileSize int64

	mu sync.Mutex // serialises changes to files
	// flushMu serialises flushes, so that flushed positions never move
	// backwards when two goroutines flush at once.
	flushMu sync.Mutex
	files   atomic.Pointer[[]*mappedFile]

	// padded lists the short last files load restored to full size.
	padded []string

	// alloc prepares the next file in the background (CommitLog only,
	// and not in Manual mode, which runs no goroutines).
	alloc *allocator

	flushedWhere   atomic.Int64
	storeTimestamp atomic.Int64

	// noTailZeroing is hooks.Engine.NoTailZeroing (tests only).
	noTailZeroing bool
	// noRedirty is the NoRedirty hook (tests only).
	noRedirty bool
	// writeThrough writes appends with the segments' Pwrite where they
	// have it (the CommitLog under SYNC_FLUSH; see mappedFile.pw).
	writeThrough bool

	// deferDirSync leaves the directory sync of a new file to the first
	// sync of the queue's data (syncDirs) instead of doing it in create
	// (ConsumeQueues: create runs on the dispatcher's path).
	deferDirSync bool
	// noDeferredDirSync is hooks.Engine.NoDeferredDirSync (tests only).
	noDeferredDirSync bool
	dirs              pendingDirs

	// noReadAround advises each file the queue creates against fault
	// read-around (adviseNoReadAround). ConsumeQueues: a new file's first
	// write fault otherwise reads around it, 1-1.5 ms on the dispatcher's
	// path where 0.2 ms will do (see BENCHMARKS.md).
	noReadAround bool

	// releaseFaults hears of failed page releases (releaseWritten): the
	// store's counter and log. Nil (queues built alone in tests) drops
	// them.
	releaseFaults *pageReleaseFaults
}

// pendingDirs counts the creations whose directory entries await a sync
// (deferDirSync). created and createdDir are bumped under the queue's mu
// before the new file is published; dirSynced and parentsSynced, under
// dirMu, say up to which creation the directory (and, for a creation that
// made the directory, its parents) has been synced. Counters rather than a
// flag: a creation that lands while a sync runs is not covered by it.
type pendingDirs struct {
	created    atomic.Int64
	createdDir atomic.Int64 // the last creation that made the directory

	dirMu         sync.Mutex
	dirSynced     int64
	parentsSynced int64
}

func newMappedFileQueue(fs backend.FS, dir string, fileSize int64) *mappedFileQueue {
	q := &mappedFileQueue{fs: fs, dir: dir, fileSize: fileSize}
	q.files.Store(&[]*mappedFile{})
	return q
}

// snapshot returns the current file list; do not modify it.
func (q *mappedFileQueue) snapshot() []*mappedFile { return *q.files.Load() }

// FileSize returns the size of each file.
func (q *mappedFileQueue) FileSize() int64 { return q.fileSize }

// load opens the existing segments of the directory, sorted by name. Every
// segment must have the queue's size; the segments must be contiguous.
// Files with other names are left alone and reported to log
// (listQueueFiles). Positions are set to the file size; recovery fixes them.
func (q *mappedFileQueue) load(log *slog.Logger) error {
	names, err := listQueueFiles(q.fs, q.dir, log)
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", q.dir, err)
	}
	tail, err := q.shortTail(names)
	if err != nil {
		return err
	}
	var files []*mappedFile
	closeAll := func() {
		for _, mf := range files {
			mf.shutdown()
		}
	}
	for i, n := range names {
		if strings.HasSuffix(n, padSuffix) {
			// Left by a crash while padding: the original is intact.
			if err := q.fs.Remove(path.Join(q.dir, n)); err != nil {
				closeAll()
				return fmt.Errorf("remove %s: %w", n, err)
			}
			continue
		}
		from, err := fileNameToOffset(n)
		if err != nil {
			closeAll()
			return fmt.Errorf("%s: %w", q.dir, err)
		}
		if i >= tail {
			if err := q.padShortTail(n); err != nil {
				closeAll()
				return err
			}
		}
		if err := q.checkNext(files, n, from); err != nil {
			closeAll()
			return err
		}
		p := path.Join(q.dir, n)
		seg, err := q.fs.Open(p)
		if err != nil {
			closeAll()
			return fmt.Errorf("open %s: %w", p, err)
		}
		mf := q.newFile(seg, p, from)
		mf.setPositions(q.fileSize)
		files = append(files, mf)
	}
	q.files.Store(&files)
	return nil
}

// shortTail returns the index in names from which the files that end the
// queue are a power cut's leftovers: files shorter than the queue's file
// size, and full-size files after them that hold only zeros
// (len(names) when the last file is full and there is no short file).
//
// A file's size is made durable by its first sync, so a power cut takes
// back the size of every file created since: a ConsumeQueue that filled a
// file between two flushes comes back with two empty files at its end, an
// ASYNC_FLUSH CommitLog that filled one between two flushes likewise. A
// later file may still come back full size, holding zeros: one made ahead
// and synced empty (the allocator). Data is synced in offset order, so
// nothing after a file whose size was never synced holds synced data: the
// short files are padded like a short last file and recovery finds the
// end before them. A short file followed by a file holding data is not a
// cut's doing: checkNext refuses it.
func (q *mappedFileQueue) shortTail(names []string) (int, error) {
	sizes := make([]int64, len(names))
	lastShort := -1
	for i, n := range names {
		if strings.HasSuffix(n, padSuffix) {
			sizes[i] = q.fileSize
			continue
		}
		p := path.Join(q.dir, n)
		size, err := q.fs.Stat(p)
		if err != nil {
			return 0, fmt.Errorf("stat %s: %w", p, err)
		}
		sizes[i] = size
		if size < q.fileSize {
			lastShort = i
		}
	}
	if lastShort < 0 {
		return len(names), nil
	}
	for _, n := range names[lastShort+1:] {
		if strings.HasSuffix(n, padSuffix) {
			continue
		}
		zero, err := q.allZeroFile(path.Join(q.dir, n))
		if err != nil || !zero {
			return len(names), err
		}
	}
	tail := lastShort
	for tail > 0 && sizes[tail-1] < q.fileSize {
		tail--
	}
	return tail, nil
}

// allZeroFile reports whether the file at p holds only zero bytes.
func (q *mappedFileQueue) allZeroFile(p string) (bool, error) {
	seg, err := q.fs.Open(p)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", p, err)
	}
	defer seg.Close()
	return allZero(seg.View(0, seg.Size())), nil
}

// padSuffix names the copy made while padding a short last file.
const padSuffix = ".pad"

// padShortTail restores the full size of the queue's last file when it is
// shorter than the queue's file size: a file truncated by a crash or a
// careless copy. Its bytes are kept and zeros appended, so recovery then
// cuts it at the last good record as it would a torn tail. The padded copy
// replaces the original atomically (a crash leaves one or the other).
func (q *mappedFileQueue) padShortTail(name string) error {
	p := path.Join(q.dir, name)
	size, err := q.fs.Stat(p)
	if err != nil || size >= q.fileSize {
		return nil // checkNext reports it
	}
	old, err := backend.ReadFile(q.fs, p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	tmp := p + padSuffix
	seg, err := q.fs.Create(tmp, q.fileSize)
	if err != nil {
		return fmt.Errorf("pad %s: %w", p, err)
	}
	_, err = seg.WriteAt(old, 0)
	if err == nil {
		err = seg.Sync(0, int64(len(old)))
	}
	err = errors.Join(err, seg.Close())
	if err == nil {
		err = q.fs.Rename(tmp, p)
	}
	if err == nil {
		err = q.fs.SyncDir(q.dir)
	}
	if err != nil {
		return fmt.Errorf("pad %s: %w", p, err)
	}
	q.padded = append(q.padded, fmt.Sprintf("%s: %d bytes, padded to %d", p, size, q.fileSize))
	return nil
}

// checkNext validates the file that follows files.
func (q *mappedFileQueue) checkNext(files []*mappedFile, name string, from int64) error {
	p := path.Join(q.dir, name)
	size, err := q.fs.Stat(p)
	if err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	if size != q.fileSize {
		return fmt.Errorf("%w: %s is %d bytes, want %d", ErrCorruptStore, p, size, q.fileSize)
	}
	if from%q.fileSize != 0 {
		return fmt.Errorf("%w: %s starts at %d, not a multiple of the file size %d", ErrCorruptStore, p, from, q.fileSize)
	}
	if n := len(files); n > 0 && files[n-1].fileFromOffset+q.fileSize != from {
		return fmt.Errorf("%w: %s does not follow %s (a file is missing)", ErrCorruptStore, p, files[n-1].name)
	}
	return nil
}

// firstFile and lastFile return nil for an empty queue.
func (q *mappedFileQueue) firstFile() *mappedFile {
	if fs := q.snapshot(); len(fs) > 0 {
		return fs[0]
	}
	return nil
}

func (q *mappedFileQueue) lastFile() *mappedFile {
	if fs := q.snapshot(); len(fs) > 0 {
		return fs[len(fs)-1]
	}
	return nil
}

// getLastMappedFile returns the file to append to, creating one at
// startOffset (rounded down to a file boundary) if the queue is empty, or
// after the last file if it is full. needCreate false never creates.
func (q *mappedFileQueue) getLastMappedFile(startOffset int64, needCreate bool) (*mappedFile, error) {
	last := q.lastFile()
	if last != nil && !last.IsFull() {
		return last, nil
	}
	if !needCreate {
		return last, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	var from int64
	switch n := len(files); {
	case n == 0:
		from = startOffset - startOffset%q.fileSize
	case !files[n-1].IsFull():
		return files[n-1], nil
	default:
		from = files[n-1].fileFromOffset + q.fileSize
	}
	mf, err := q.takeOrCreate(from)
	if err != nil {
		return nil, err
	}
	next := append(append(make([]*mappedFile, 0, len(files)+1), files...), mf)
	q.files.Store(&next)
	if q.alloc != nil {
		q.alloc.prepareNext(mf)
	}
	return mf, nil
}

// takeOrCreate returns the file the allocator prepared at from, or creates
// it now.
func (q *mappedFileQueue) takeOrCreate(from int64) (*mappedFile, error) {
	if q.alloc == nil {
		return q.create(from)
	}
	if mf := q.alloc.take(from); mf != nil {
		return mf, nil
	}
	mf, err := q.create(from)
	if err == nil {
		q.alloc.prefaultAhead(mf, 0)
	}
	return mf, err
}

// create makes a new file and syncs the directory, so that the file (and
// later the data synced into it) survives a power cut. The caller holds mu.
//
// When the queue has no file its directory may be new (MkdirAll), and a new
// directory's own entry is durable only once its parent is synced: each
// level up to the root is synced, or a power cut could drop the whole
// directory with the data synced into it.
//
// With deferDirSync these syncs are only recorded as pending and done by
// syncDirs, which every sync of the queue's data runs first: until then
// nothing relies on the file surviving a power cut (its units are not
// flushed, so no checkpoint covers them and recovery rebuilds them from the
// CommitLog). This keeps up to four directory fsyncs per new ConsumeQueue
// off the dispatcher's path. Only the last file's entry is ever pending
// (see below), so a power cut can lose the queue's tail, never a file in
// the middle.
func (q *mappedFileQueue) create(from int64) (*mappedFile, error) {
	newDir := len(q.snapshot()) == 0
	if q.deferDirSync && !newDir {
		// At most one creation pending, the last file's: with two, a
		// power cut could keep the later one's entry and lose the
		// earlier's, a gap load refuses. A queue rolls to its next file
		// rarely (a ConsumeQueue file holds 300,000 units), and the
		// flush service has usually synced the directory by then.
		if err := q.syncDirs(); err != nil {
			return nil, err
		}
	}
	if err := q.fs.MkdirAll(q.dir); err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", q.dir, err)
	}
	p := path.Join(q.dir, offsetToFileName(from))
	seg, err := q.fs.Create(p, q.fileSize)
	if errors.Is(err, backend.ErrExist) {
		// A file left behind by a truncation whose remove was lost:
		// it holds nothing we want.
		if err = q.fs.Remove(p); err == nil {
			seg, err = q.fs.Create(p, q.fileSize)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	if q.noReadAround {
		adviseNoReadAround(seg)
	}
	if q.deferDirSync {
		n := q.dirs.created.Add(1)
		if newDir {
			q.dirs.createdDir.Store(n)
		}
		return q.newFile(seg, p, from), nil
	}
	if err := q.fs.SyncDir(q.dir); err != nil {
		seg.Close()
		return nil, fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, q.dir, err)
	}
	if newDir {
		if err := syncParents(q.fs, q.dir); err != nil {
			seg.Close()
			return nil, err
		}
	}
	return q.newFile(seg, p, from), nil
}

// syncDirs makes the directory entries of the files created so far durable
// (deferDirSync): the queue's directory, and every level above it if a
// creation made the directory. Whoever syncs the queue's data, or relies on
// its files surviving a power cut, calls it first, after it has picked the
// file (a file it sees was counted before it was published).
func (q *mappedFileQueue) syncDirs() error {
	if !q.deferDirSync || q.noDeferredDirSync {
		return nil
	}
	d := &q.dirs
	n, nd := d.created.Load(), d.createdDir.Load()
	d.dirMu.Lock()
	defer d.dirMu.Unlock()
	if d.dirSynced < n {
		if err := q.fs.SyncDir(q.dir); err != nil {
			return fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, q.dir, err)
		}
		d.dirSynced = n
	}
	if d.parentsSynced < nd {
		if err := syncParents(q.fs, q.dir); err != nil {
			return err
		}
		d.parentsSynced = nd
	}
	return nil
}

// newFile wraps a segment of the queue with the queue's write settings.
func (q *mappedFileQueue) newFile(seg backend.Segment, name string, from int64) *mappedFile {
	mf := newMappedFile(seg, name, from)
	mf.noRedirty = q.noRedirty
	if pw, ok := seg.(backend.Pwriter); ok && q.writeThrough {
		mf.pw = pw
	}
	if wp, ok := seg.(backend.WritePrefaulter); ok && q.noReadAround && mf.pw == nil {
		mf.ahead = wp // see writeAheadInline
	}
	return mf
}

// syncParents syncs every directory above dir, deepest first, up to the
// root, making the entries of directories created below them durable.
func syncParents(fs backend.FS, dir string) error {
	for d := dir; d != "." && d != "/" && d != ""; {
		d = path.Dir(d)
		if err := fs.SyncDir(d); err != nil {
			return fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, d, err)
		}
	}
	return nil
}

// removeFile closes and removes mf and syncs the directory at once. Files
// are removed one at a time, each removal made durable before the next,
// from the end of the queue (truncation) or from its start (retention), so
// that a power cut in between can never leave a gap in the queue.
func (q *mappedFileQueue) removeFile(mf *mappedFile) error {
	mf.shutdown()
	if err := q.fs.Remove(mf.name); err != nil && !errors.Is(err, backend.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", mf.name, err)
	}
	if err := q.fs.SyncDir(q.dir); err != nil {
		return fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, q.dir, err)
	}
	return nil
}

// findMappedFileByOffset returns the file holding offset, or the first file
// when returnFirstOnNotFound is set and offset is outside the queue.
func (q *mappedFileQueue) findMappedFileByOffset(offset int64, returnFirstOnNotFound bool) *mappedFile {
	files := q.snapshot()
	if len(files) == 0 {
		return nil
	}
	first := files[0]
	if offset >= first.fileFromOffset && offset < files[len(files)-1].fileFromOffset+q.fileSize {
		i := (offset - first.fileFromOffset) / q.fileSize
		if mf := files[i]; offset >= mf.fileFromOffset && offset < mf.fileFromOffset+q.fileSize {
			return mf
		}
	}
	if returnFirstOnNotFound {
		return first
	}
	return nil
}

// MinOffset returns the offset of the first byte still held (0 if empty).
func (q *mappedFileQueue) MinOffset() int64 {
	if mf := q.firstFile(); mf != nil {
		return mf.fileFromOffset
	}
	return 0
}

// MaxOffset returns the offset after the last published byte.
func (q *mappedFileQueue) MaxOffset() int64 {
	if mf := q.lastFile(); mf != nil {
		return mf.fileFromOffset + mf.wrote.Load()
	}
	return 0
}

// FlushedWhere returns the offset up to which data is synced.
func (q *mappedFileQueue) FlushedWhere() int64 { return q.flushedWhere.Load() }

// flush syncs the file holding flushedWhere under the least-pages rule and
// reports whether flushedWhere stayed where it was. Like RocketMQ it
// flushes one file per call; callers loop to cross a file boundary.
func (q *mappedFileQueue) flush(leastPages int) (unchanged bool, err error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	where := q.flushedWhere.Load()
	first := q.firstFile()
	if first == nil {
		return true, nil
	}
	if where < first.fileFromOffset {
		// Nothing below the first file exists (a queue that starts past
		// 0, or whose head was deleted): flushing starts at its start.
		// RocketMQ only special-cases where == 0, which leaves a queue
		// whose flushedWhere points at a removed file never flushed.
		where = first.fileFromOffset
		q.flushedWhere.Store(where)
	}
	mf := q.findMappedFileByOffset(where, false)
	if mf == nil {
		return true, nil
	}
	if err := q.syncDirs(); err != nil {
		return true, err
	}
	ts := mf.storeTimestamp.Load()
	if mf.pw == nil && mf.isAbleToFlush(leastPages) {
		q.releaseWritten(mf)
	}
	pos, err := mf.flush(leastPages)
	next := mf.fileFromOffset + pos
	if next > where {
		q.flushedWhere.Store(next)
	}
	if err == nil && leastPages == 0 && ts > 0 {
		q.storeTimestamp.Store(ts)
	}
	return next == where, err
}

// pageReleaser is implemented by segments that can drop the process's
// page-table entries of a range without losing its content (the mmap
// backend's ReleasePages).
type pageReleaser interface {
	ReleasePages(off, n int64) error
}

// releaseWritten drops the mapping of the whole pages a flush of mf is
// about to sync, when the appends went through the mapping (mf.pw nil).
// Writeback must write-protect every page mapped writable, and the kernel
// does it one page at a time, each with a TLB shootdown the flusher waits
// for: on a 2-core VM that was most of the async
// flush's CPU (12 ms a 500 ms round at 100 k msgs/s) and of the
// ConsumeQueue flush's, bursts that slowed the whole server.
// Dropping the range at once costs one. The bytes stay in the
// page cache, dirty, and the sync that follows writes them as before; a
// later reader maps them again (read-only, so no later flush pays for
// them). Only pages below wrote are dropped: the appender writes the last,
// partial one again. A failure (not expected: the range is mapped and
// unlocked) leaves the pages mapped, which costs the flush time and
// nothing else, so it is not an error of the flush: it is counted and
// logged (releaseFaults), and the flush goes on.
func (q *mappedFileQueue) releaseWritten(mf *mappedFile) {
	r, ok := mf.seg.(pageReleaser)
	if !ok || !mf.hold() {
		return
	}
	defer mf.release()
	from := mf.flushed.Load() &^ (osPageSize - 1)
	to := mf.wrote.Load()
	if to <= from {
		return
	}
	err := r.ReleasePages(from, to-from)
	switch {
	case q.releaseFaults == nil:
	case err != nil:
		q.releaseFaults.failed(mf.name, from, to, err)
	default:
		q.releaseFaults.succeeded()
	}
}

// flushAll flushes until everything published is synced. Each round syncs
// one file; flushedWhere moves into the next file when one is done.
func (q *mappedFileQueue) flushAll() error {
	for {
		unchanged, err := q.flush(0)
		if err != nil || unchanged {
			return err
		}
	}
}

// truncateDirtyFiles sets positions to offset in the file holding it, zeroes
// and syncs the stale tail of that file, and deletes every later file, the
// last first (see removeFile).
func (q *mappedFileQueue) truncateDirtyFiles(offset int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	keep := len(files)
	for keep > 0 && files[keep-1].fileFromOffset > offset {
		keep--
	}
	for i := len(files) - 1; i >= keep; i-- {
		// Zero (and sync) the file before it goes: on a disk that may
		// hand its freed blocks to a later file's never-synced pages
		// after a power cut (ext4 data=writeback), the records it held
		// would reappear in the file that replaces it, at the very
		// offsets their PHYSICALOFFSET names.
		if !q.noTailZeroing {
			if _, err := files[i].zeroTail(0); err != nil {
				return err
			}
		}
		rest := files[:i:i]
		q.files.Store(&rest)
		if err := q.removeFile(files[i]); err != nil {
			return err
		}
	}
	if keep > 0 {
		if mf := files[keep-1]; offset < mf.fileFromOffset+q.fileSize {
			pos := offset - mf.fileFromOffset
			if !q.noTailZeroing {
				if _, err := mf.zeroTail(pos); err != nil {
					return err
				}
			}
			mf.setPositions(pos)
		}
	}
	if offset < q.flushedWhere.Load() || keep == 0 {
		q.flushedWhere.Store(offset)
	}
	return nil
}

// deleteLastFile closes and removes the last file.
func (q *mappedFileQueue) deleteLastFile() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	if len(files) == 0 {
		return nil
	}
	mf := files[len(files)-1]
	rest := append([]*mappedFile(nil), files[:len(files)-1]...)
	q.files.Store(&rest)
	if q.flushedWhere.Load() > mf.fileFromOffset {
		q.flushedWhere.Store(mf.fileFromOffset)
	}
	return q.removeFile(mf)
}

// setFlushedWhere records the recovered end as synced.
func (q *mappedFileQueue) setFlushedWhere(off int64) { q.flushedWhere.Store(off) }

// deleteFirstFiles removes files from the head of the queue while keep
// returns false for them, and reports how many went. The last file is never
// deleted. Readers holding a view keep the segment open until they release.
func (q *mappedFileQueue) deleteFirstFiles(keep func(*mappedFile) bool) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	n := 0
	for n < len(files)-1 && !keep(files[n]) {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	// The files synced below must survive if their removal is lost.
	if err := q.syncDirs(); err != nil {
		return 0, err
	}
	// First file first, each removal durable before the next (see
	// removeFile): a power cut leaves a shorter head, never a gap.
	for i, mf := range files[:n] {
		// Sync what the file holds before it goes: if a power cut
		// undoes the removal, the file comes back whole. Otherwise an
		// unsynced tail (say, its BLANK record) would end recovery there
		// and cut away every later file, synced messages included.
		if err := mf.seg.Sync(0, mf.wrote.Load()); err != nil {
			mf.redirty(0, mf.wrote.Load())
			return i, fmt.Errorf("%w: sync %s before removing it: %w", ErrFlushFailed, mf.name, err)
		}
		rest := append([]*mappedFile(nil), files[i+1:]...)
		q.files.Store(&rest)
		if err := q.removeFile(mf); err != nil {
			return i, err
		}
	}
	return n, nil
}

// shutdown closes every file (after its readers release) without syncing.
func (q *mappedFileQueue) shutdown() {
	if q.alloc != nil {
		q.alloc.stop()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, mf := range q.snapshot() {
		mf.shutdown()
	}
	q.files.Store(&[]*mappedFile{})
}

// destroy removes every file, the last first (see removeFile), and then
// the directory.
func (q *mappedFileQueue) destroy() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	files := q.snapshot()
	for i := len(files) - 1; i >= 0; i-- {
		rest := files[:i:i]
		q.files.Store(&rest)
		if err := q.removeFile(files[i]); err != nil {
			return err
		}
	}
	q.flushedWhere.Store(0)
	// A lost removal of the (now empty) directory is harmless: an empty
	// queue directory loads as an empty queue.
	if err := q.fs.RemoveAll(q.dir); err != nil {
		return fmt.Errorf("remove %s: %w", q.dir, err)
	}
	return nil
}
