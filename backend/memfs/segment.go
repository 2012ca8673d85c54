package memfs

import (
	"fmt"
	"sync"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.Segment = (*segment)(nil)

// maxRunPages bounds the bytes Sync copies per trip through segment.mu, so
// that the appender waits for at most one such copy.
const maxRunPages = 64

// segment is an open file: a page cache buffer plus the afero handle that
// holds its durable image.
type segment struct {
	fs   *FS
	name string // as the caller gave it; Name returns it
	size int64
	// buf is the page cache, never resized. Read by View without a lock;
	// written by WriteAt under mu; set to nil by Close.
	buf []byte

	// path is the file's current canonical name: Rename updates it and
	// Remove sets it to "" (unlinked), so that Close and DirtyPages file
	// the dirty pages under the right name. Guarded by fs.mu.
	path string

	// syncMu serialises Sync and Close, and guards file and scratch. It is
	// held across the afero I/O so that a Sync returns only once every page
	// dirty at its start is durable, even if another Sync cleared the bit.
	syncMu  sync.Mutex
	file    afero.File
	scratch []byte

	// mu guards the dirty bits and the bytes of buf against a concurrent
	// page copy. closed is set with both syncMu and mu held.
	mu struct {
		sync.Mutex
		dirty  bitmap
		closed bool
	}
}

func newSegment(f *FS, name, p string, file afero.File, buf []byte) *segment {
	s := &segment{fs: f, name: name, size: int64(len(buf)), buf: buf, path: p, file: file}
	s.mu.dirty = newBitmap(pageCount(s.size))
	return s
}

// Name returns the name the segment was created or opened with.
func (s *segment) Name() string { return s.name }

// Size returns the fixed size of the segment.
func (s *segment) Size() int64 { return s.size }

// View returns buf[off:off+n], capped so that an append cannot spill past it.
func (s *segment) View(off, n int64) []byte {
	if off < 0 || n < 0 || off > int64(len(s.buf))-n {
		return nil
	}
	return s.buf[off : off+n : off+n]
}

// WriteAt copies p into the page cache and marks its pages dirty.
func (s *segment) WriteAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return 0, pathErr("write", s.name, backend.ErrClosed)
	}
	if off < 0 || off > s.size-int64(len(p)) {
		return 0, pathErr("write", s.name,
			fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, len(p), off, s.size))
	}
	if len(p) == 0 {
		return 0, nil
	}
	copy(s.buf[off:], p)
	first, end := pageSpan(off, int64(len(p)))
	for i := first; i < end; i++ {
		s.mu.dirty.set(i)
	}
	return len(p), nil
}

// Sync writes the dirty pages touching [off, off+n) to the afero file and
// fsyncs it (a no-op on MemMapFs).
//
// Like Linux after a failed fsync, pages whose write reached afero count as
// clean even if the final file sync fails: the data may be lost for good,
// and the engine must treat a Sync error as fatal. Pages whose write failed
// stay dirty.
func (s *segment) Sync(off, n int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.isClosed() {
		return pathErr("sync", s.name, backend.ErrClosed)
	}
	if n == 0 {
		return nil
	}
	if off < 0 || n < 0 || off > s.size-n {
		return pathErr("sync", s.name,
			fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, n, off, s.size))
	}
	first, end := pageSpan(off, n)
	wrote := false
	for next := first; next < end; {
		start, stop := s.takeRun(next, end)
		if start == stop {
			break
		}
		if _, err := s.file.WriteAt(s.scratch, start*PageSize); err != nil {
			s.markDirty(start, stop)
			return pathErr("sync", s.name, err)
		}
		wrote = true
		next = stop
	}
	if wrote {
		if err := s.file.Sync(); err != nil {
			return pathErr("sync", s.name, err)
		}
	}
	return nil
}

// takeRun finds the first run of dirty pages in [from, end), at most
// maxRunPages long, copies it into scratch and clears its bits, all under
// mu so that no WriteAt is half-way through those bytes. It returns the
// run's page span, empty when no page is dirty. Called with syncMu held.
func (s *segment) takeRun(from, end int64) (start, stop int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start = s.mu.dirty.next(from, end)
	if start == end {
		return end, end
	}
	stop = start
	for stop < end && stop-start < maxRunPages && s.mu.dirty.get(stop) {
		s.mu.dirty.clear(stop)
		stop++
	}
	s.scratch = append(s.scratch[:0], s.buf[start*PageSize:min(stop*PageSize, s.size)]...)
	return start, stop
}

func (s *segment) markDirty(start, stop int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := start; i < stop; i++ {
		s.mu.dirty.set(i)
	}
}

func (s *segment) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// Close releases the buffer and the afero handle without syncing. The
// dirty pages stay in the FS's page cache (see the package doc), unless
// the file was removed meanwhile. Closing again does nothing.
func (s *segment) Close() error {
	s.fs.mu.Lock()
	defer s.fs.mu.Unlock()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	if s.path != "" {
		if pages := s.dirtyPagesLocked(); len(pages) > 0 {
			s.fs.keep(s.path, pages)
		}
	}
	delete(s.fs.mu.open, s)
	s.buf = nil
	s.scratch = nil
	if err := s.file.Close(); err != nil {
		return pathErr("close", s.name, err)
	}
	return nil
}
