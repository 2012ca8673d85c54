package crashsim

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
)

// PageSize is the granularity of dirty tracking; SectorSize the granularity
// at which a page that was being written back can be torn.
const (
	PageSize   = 4096
	SectorSize = 512
)

// inode is a file: its durable image and its page cache, of one fixed size.
// Several segments (open handles) and, after a rename, several names over
// time share it.
type inode struct {
	// mu guards durable, dirty and the bytes of cache against a
	// concurrent Sync copy; View reads cache without it (the backend
	// contract keeps readers below published positions).
	mu      sync.Mutex
	durable []byte
	cache   []byte
	dirty   []bool // one per page
	// written is set, per page, once a sync has written the page to the
	// disk: from then on the page has a block of its own. A page never
	// written back may, with Options.ReuseFreedBlocks, come back after a
	// crash holding a freed block of a removed file.
	written []bool
}

func newInode(size int64) *inode {
	pages := (size + PageSize - 1) / PageSize
	return &inode{durable: make([]byte, size), cache: make([]byte, size),
		dirty: make([]bool, pages), written: make([]bool, pages)}
}

// loadedInode returns an inode whose content is all durable (and counts as
// written back: a loaded file never exposes freed blocks).
func loadedInode(data []byte) *inode {
	ino := newInode(int64(len(data)))
	copy(ino.durable, data)
	copy(ino.cache, data)
	for i := range ino.written {
		ino.written[i] = true
	}
	return ino
}

// durablePages returns copies of the durable pages that were written back
// and are not all zero: what the disk's freed blocks hold once the file is
// deleted.
func (ino *inode) durablePages() [][]byte {
	ino.mu.Lock()
	defer ino.mu.Unlock()
	var out [][]byte
	for i, w := range ino.written {
		lo, hi := ino.pageRange(i)
		if w && !isZero(ino.durable[lo:hi]) {
			out = append(out, append([]byte(nil), ino.durable[lo:hi]...))
		}
	}
	return out
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (ino *inode) size() int64 { return int64(len(ino.cache)) }

// pageSpan returns the pages [first, end) touching [off, off+n), n > 0.
func pageSpan(off, n int64) (int, int) {
	return int(off / PageSize), int((off+n-1)/PageSize + 1)
}

func (ino *inode) write(p []byte, off int64) {
	ino.mu.Lock()
	defer ino.mu.Unlock()
	copy(ino.cache[off:], p)
	first, end := pageSpan(off, int64(len(p)))
	for i := first; i < end; i++ {
		ino.dirty[i] = true
	}
}

// sync makes the dirty pages of a range durable; with lose set, it drops
// them instead (a failed writeback: clean in the cache, old on disk).
func (ino *inode) sync(off, n int64, lose bool) {
	ino.mu.Lock()
	defer ino.mu.Unlock()
	first, end := pageSpan(off, n)
	for i := first; i < end; i++ {
		if !ino.dirty[i] {
			continue
		}
		ino.dirty[i] = false
		if !lose {
			lo, hi := ino.pageRange(i)
			copy(ino.durable[lo:hi], ino.cache[lo:hi])
			ino.written[i] = true
		}
	}
}

func (ino *inode) pageRange(i int) (int, int) {
	lo := i * PageSize
	return lo, min(lo+PageSize, len(ino.cache))
}

// segment is an open handle on an inode.
type segment struct {
	fs     *FS
	name   string
	path   string // canonical name at open time, for injection
	ino    *inode
	closed atomic.Bool
}

var _ backend.Segment = (*segment)(nil)

func (s *segment) Name() string { return s.name }
func (s *segment) Size() int64  { return s.ino.size() }

// View returns the page cache bytes; nil outside the file or once closed.
func (s *segment) View(off, n int64) []byte {
	if s.closed.Load() || off < 0 || n < 0 || off > s.ino.size()-n {
		return nil
	}
	return s.ino.cache[off : off+n : off+n]
}

// WriteAt copies p into the page cache, unless the injector objects.
func (s *segment) WriteAt(p []byte, off int64) (int, error) {
	if s.closed.Load() {
		return 0, s.err("write", backend.ErrClosed)
	}
	if off < 0 || off > s.ino.size()-int64(len(p)) {
		return 0, s.err("write", fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, len(p), off, s.ino.size()))
	}
	err := s.fs.enter(Op{Kind: OpWrite, Path: s.path, Off: off, Len: int64(len(p))})
	switch {
	case err == nil:
	case errorsIs(err, ErrFrozen):
		return 0, s.err("write", err)
	case errorsIs(err, ErrCrash):
		s.ino.write(p, off) // the write made it to the cache, then the power went
		return 0, s.err("write", err)
	case errorsIs(err, ErrShortWrite):
		h := len(p) / 2
		if h > 0 {
			s.ino.write(p[:h], off)
		}
		return h, s.err("write", err)
	default:
		return 0, s.err("write", err)
	}
	if len(p) > 0 {
		s.ino.write(p, off)
	}
	return len(p), nil
}

// Sync makes the dirty pages touching [off, off+n) durable.
func (s *segment) Sync(off, n int64) error {
	if s.closed.Load() {
		return s.err("sync", backend.ErrClosed)
	}
	if n == 0 {
		return nil
	}
	if off < 0 || n < 0 || off > s.ino.size()-n {
		return s.err("sync", fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, n, off, s.ino.size()))
	}
	err := s.fs.enter(Op{Kind: OpSync, Path: s.path, Off: off, Len: n})
	if errorsIs(err, ErrIO) {
		s.ino.sync(off, n, true)
	}
	if err != nil {
		return s.err("sync", err)
	}
	s.ino.sync(off, n, false)
	return nil
}

// Close releases the handle; the page cache stays with the inode, as
// closing a file does not sync it.
func (s *segment) Close() error {
	s.closed.Store(true)
	s.fs.forgetHandle(s)
	return nil
}

func (s *segment) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: s.name, Err: err}
}
