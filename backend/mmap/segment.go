package mmap

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"syscall"

	mmapgo "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

// segment is a file mapped shared read-write for its whole, fixed size.
//
// Invariant: len(data) == size, or data is nil when size == 0 (an empty file
// cannot be mapped). data and f never change after construction, so the hot
// path reads them without locking; closed is atomic only so that a call made
// after Close reliably sees it.
type segment struct {
	name   string
	path   string
	size   int64
	f      *os.File
	fd     int // f's descriptor, for Pwrite
	data   mmapgo.MMap
	closed atomic.Bool
	// readOnly segments are mapped PROT_READ: a write would fault, so
	// WriteAt refuses it first.
	readOnly bool
}

var (
	_ backend.Segment    = (*segment)(nil)
	_ Adviser            = (*segment)(nil)
	_ backend.Prefaulter = (*segment)(nil)

	_ backend.WritePrefaulter = (*segment)(nil)
	_ backend.ReadPrefaulter  = (*segment)(nil)
	_ backend.FileReader      = (*segment)(nil)
)

// Adviser is implemented by the segments of this package. Callers holding a
// backend.Segment reach it with a type assertion.
type Adviser interface {
	// Advise passes a madvise(2) hint for the whole segment, such as
	// unix.MADV_WILLNEED before reading a segment through or
	// unix.MADV_SEQUENTIAL for one about to be scanned.
	Advise(advice int) error
}

// pageSize is the granularity of msync and of the mapping.
var pageSize = int64(os.Getpagesize())

// creatingSuffix names a file while it is being preallocated. A process
// killed between creating a file and preallocating it must not leave a
// short file under the real name (the store would refuse to open), so the
// file gets its real name only once it has its full size. List hides such
// leftovers and the next Create of the name removes them.
const creatingSuffix = ".creating"

// createSegment creates, preallocates and maps the file at path. The file
// appears under path only at its full size, synced: it is built under a temporary
// name and hard-linked into place, which also fails (with ErrExist) if path
// exists, exactly like O_EXCL. On failure nothing is left under path.
//
// The temporary name is unlinked only once no descriptor is open on it,
// and the segment is opened again under path: a file system that cannot
// unlink an open file renames it instead (FUSE to .fuse_hidden<N>, NFS to
// .nfs<N>) until it is closed, so unlinking the temporary name while the
// segment holds it open would leave a second name of every segment beside
// it for as long as the store runs, and for good after a crash.
func createSegment(name, path string, size int64) (*segment, error) {
	if size < 0 || size > math.MaxInt {
		return nil, fmt.Errorf("mmap: create %s: size %d: %w", path, size, backend.ErrRange)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, wrap("create", path, os.ErrExist)
	}
	tmp := path + creatingSuffix
	_ = os.Remove(tmp) // left by a process killed mid-create
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return nil, wrap("create", path, err)
	}
	err = preallocate(f, size)
	if err == nil {
		// The size must be durable before the name is: a power cut
		// otherwise leaves a short file under the real name (ext4
		// journals fallocate's size, but a file system that keeps
		// sizes with data, such as LazyFS or a FUSE file system,
		// loses it until the first sync). One fsync a segment, paid
		// where segments are made: the CommitLog's allocator, a
		// ConsumeQueue rolling to its next file.
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Link(tmp, path)
	}
	if rerr := os.Remove(tmp); err == nil && rerr != nil {
		_ = os.Remove(path)
		err = rerr
	}
	if err != nil {
		return nil, wrap("create", path, err)
	}
	seg, err := openSegment(name, path, false)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return seg, nil
}

// openSegment maps the existing regular file at path.
func openSegment(name, path string, readOnly bool) (*segment, error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, syscall.EISDIR) {
		return nil, notRegular("open", path)
	}
	if err != nil {
		return nil, wrap("open", path, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, notRegular("open", path)
	}
	var seg *segment
	if err == nil {
		seg, err = mapFile(name, path, f, fi.Size(), readOnly)
	}
	if err != nil {
		_ = f.Close()
		return nil, wrap("open", path, err)
	}
	return seg, nil
}

// mapFile maps the first size bytes of f, which must be exactly size bytes
// long. A size-0 file is left unmapped because mmap(2) rejects length 0.
func mapFile(name, path string, f *os.File, size int64, readOnly bool) (*segment, error) {
	if size > math.MaxInt {
		return nil, fmt.Errorf("size %d: %w", size, backend.ErrRange)
	}
	seg := &segment{name: name, path: path, size: size, f: f, fd: int(f.Fd()), readOnly: readOnly}
	if size == 0 {
		return seg, nil
	}
	prot := mmapgo.RDWR
	if readOnly {
		prot = mmapgo.RDONLY
	}
	data, err := mmapgo.MapRegion(f, int(size), prot, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	seg.data = data
	return seg, nil
}

// Name returns the name the segment was created or opened with.
func (s *segment) Name() string { return s.name }

// Size returns the fixed size of the segment.
func (s *segment) Size() int64 { return s.size }

// inRange reports whether [off, off+n) lies inside the segment, without
// overflowing for any off and n.
func (s *segment) inRange(off, n int64) bool {
	return off >= 0 && n >= 0 && off <= s.size-n
}

// View returns the mapped bytes [off, off+n). Its capacity ends with the
// range, so that an append by the caller cannot write into the mapping.
func (s *segment) View(off, n int64) []byte {
	if s.closed.Load() || !s.inRange(off, n) {
		return nil
	}
	if s.data == nil {
		return []byte{} // size 0: in range, but there is no mapping to slice
	}
	return s.data[off : off+n : off+n]
}

// WriteAt copies p into the mapping at off. The bounds check is what keeps a
// bad offset from becoming a SIGBUS or a write into unrelated memory.
func (s *segment) WriteAt(p []byte, off int64) (int, error) {
	if s.closed.Load() {
		return 0, s.errClosed("write")
	}
	if s.readOnly {
		return 0, fmt.Errorf("mmap: write %s: %w", s.path, backend.ErrReadOnly)
	}
	if !s.inRange(off, int64(len(p))) {
		return 0, fmt.Errorf("mmap: write %s at %d, %d bytes (size %d): %w",
			s.path, off, len(p), s.size, backend.ErrRange)
	}
	return copy(s.data[off:], p), nil
}

// Sync msyncs the whole pages covering [off, off+n) with MS_SYNC, which
// returns only once they are on stable storage.
func (s *segment) Sync(off, n int64) error {
	if s.closed.Load() {
		return s.errClosed("sync")
	}
	if s.readOnly {
		return nil // nothing of ours is dirty
	}
	if n == 0 {
		return nil // msync of zero length would fail; there is nothing to do
	}
	if !s.inRange(off, n) {
		return fmt.Errorf("mmap: sync %s at %d, %d bytes (size %d): %w",
			s.path, off, n, s.size, backend.ErrRange)
	}
	// msync needs a page-aligned start; the mapping starts on a page, so
	// rounding off down aligns the address. The kernel rounds the length
	// up to whole pages itself, so the end stops at the segment size and
	// never slices past the mapping.
	start := off &^ (pageSize - 1)
	if err := unix.Msync(s.data[start:off+n], unix.MS_SYNC); err != nil {
		return fmt.Errorf("mmap: sync %s at %d, %d bytes: %w", s.path, off, n, err)
	}
	return nil
}

// ReleasePages drops this process's page-table entries for the whole pages
// inside [off, off+n) (MADV_DONTNEED), keeping their content: the mapping
// is shared, so the bytes stay in the page cache, dirty ones included, and
// the next access maps them again. Writeback of a page that a process has
// mapped writable must write-protect it first, one TLB shootdown (an
// inter-processor interrupt that the flusher waits for) per page; dropping
// the entries of a range at once costs one. So a flusher of pages written
// through the mapping calls it for the pages below the write position
// before Sync (see engine's async flush). Partial pages at either end are
// left mapped; a range holding no whole page is a no-op.
func (s *segment) ReleasePages(off, n int64) error {
	if s.closed.Load() {
		return s.errClosed("release")
	}
	if s.data == nil || n <= 0 {
		return nil
	}
	if !s.inRange(off, n) {
		return fmt.Errorf("mmap: release %s at %d, %d bytes (size %d): %w",
			s.path, off, n, s.size, backend.ErrRange)
	}
	start := (off + pageSize - 1) &^ (pageSize - 1)
	end := (off + n) &^ (pageSize - 1)
	if end <= start {
		return nil
	}
	if err := unix.Madvise(s.data[start:end], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("mmap: release %s [%d,%d): %w", s.path, start, end, err)
	}
	return nil
}

// Advise passes a madvise(2) hint for the whole segment.
func (s *segment) Advise(advice int) error {
	if s.closed.Load() {
		return s.errClosed("advise")
	}
	if s.data == nil {
		return nil
	}
	if err := unix.Madvise(s.data, advice); err != nil {
		return fmt.Errorf("mmap: advise %s (%d): %w", s.path, advice, err)
	}
	return nil
}

// Prefault reads the segment's pages into the page cache and maps them
// (MADV_POPULATE_READ, Linux 5.14+) without dirtying them: a fallocated
// file's pages come in as clean zero pages, and the first write to each
// then costs a minor fault. It may run while the segment is being written.
// Older kernels refuse the advice; the pages are then faulted on first use
// as usual.
func (s *segment) Prefault() error {
	if s.closed.Load() || s.data == nil {
		return nil
	}
	if err := unix.Madvise(s.data, unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("mmap: prefault %s: %w", s.path, err)
	}
	return nil
}

// PrefaultWrite maps the pages of [off, off+n) writable
// (MADV_POPULATE_WRITE, Linux 5.14+): page-cache pages are allocated and
// their page-table entries made writable now, so writes to them take no
// fault. Content is unchanged. The range is clipped to the segment and
// rounded out to pages. Older kernels refuse the advice.
//
// It then reads one byte of each page (touchPages). Under a hypervisor
// that shadows the guest's page tables (a PVM guest, for one)
// the populated entries reach the hardware only on the first access to
// each page, a trap to the hypervisor the guest never sees as a page
// fault: 7-9 µs a page here, which the first write would otherwise pay (a
// 400-byte copy into a just-populated page cost 0.7-1.1 µs, into a
// touched one 15 ns; BENCHMARKS.md, "The machine").
// A read suffices, as the guest entry is already writable and dirty, and
// it is safe while the range is being written: the byte read is discarded.
func (s *segment) PrefaultWrite(off, n int64) error {
	if s.closed.Load() || s.data == nil || s.readOnly || n <= 0 || off >= s.size {
		return nil
	}
	start := max(off, 0) &^ (pageSize - 1)
	end := min(off+n, s.size)
	if err := unix.Madvise(s.data[start:end], unix.MADV_POPULATE_WRITE); err != nil {
		return fmt.Errorf("mmap: prefault for writing %s [%d,%d): %w", s.path, start, end, err)
	}
	if !noTouch {
		touchPages(s.data[start:end])
	}
	return nil
}

// noTouch switches touchPages off (tests and benchmarks comparing both).
var noTouch bool

// touchPages reads the first byte of each page of b and returns their
// xor, so that the loads are not optimised away.
//
//go:noinline
func touchPages(b []byte) byte {
	var x byte
	for i := 0; i < len(b); i += int(pageSize) {
		x ^= b[i]
	}
	return x
}

// PrefaultRead loads the pages of [off, off+n) into the page cache and maps
// them read-only (MADV_POPULATE_READ, Linux 5.14+), without dirtying them:
// a fallocated file's pages come in as clean zero pages. The range is
// clipped to the segment and rounded out to pages. Older kernels refuse
// the advice.
func (s *segment) PrefaultRead(off, n int64) error {
	if s.closed.Load() || s.data == nil || n <= 0 || off >= s.size {
		return nil
	}
	start := max(off, 0) &^ (pageSize - 1)
	end := min(off+n, s.size)
	if err := unix.Madvise(s.data[start:end], unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("mmap: prefault for reading %s [%d,%d): %w", s.path, start, end, err)
	}
	return nil
}

// Close unmaps the segment and closes its file. It does not sync: unmapping
// keeps dirty pages in the page cache, and durability is Sync's job. Calls
// after the first return nil.
func (s *segment) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var unmapErr error
	if s.data != nil {
		data := s.data // Unmap nils its receiver; s.data stays immutable
		unmapErr = data.Unmap()
	}
	if err := errors.Join(unmapErr, s.f.Close()); err != nil {
		return fmt.Errorf("mmap: close %s: %w", s.path, err)
	}
	return nil
}

func (s *segment) errClosed(op string) error {
	return fmt.Errorf("mmap: %s %s: %w", op, s.path, backend.ErrClosed)
}

// ReadFile reads len(p) bytes at off through the file (pread), not the
// mapping: see backend.FileReader.
func (s *segment) ReadFile(p []byte, off int64) (int, error) {
	if s.closed.Load() {
		return 0, s.errClosed("read")
	}
	if !s.inRange(off, int64(len(p))) {
		return 0, fmt.Errorf("mmap: read %s at %d, %d bytes (size %d): %w",
			s.path, off, len(p), s.size, backend.ErrRange)
	}
	n, err := s.f.ReadAt(p, off)
	if err != nil {
		return n, fmt.Errorf("mmap: pread %s at %d: %w", s.path, off, err)
	}
	return n, nil
}
