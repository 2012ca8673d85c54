// Package backend defines the file backend that the store engine runs on.
//
// The engine never touches operating-system files directly: every byte it
// reads or writes goes through an FS and the fixed-size Segments it hands out.
// Two implementations live in sub-packages:
//
//   - backend/mmap: production; segments are preallocated files mapped shared
//     read-write, Sync is a ranged msync.
//   - backend/memfs: in memory on any afero.Fs; each segment keeps a volatile
//     buffer (the page cache) apart from its durable image (the afero file),
//     so that dropping the FS without syncing models a power cut.
//
// crashsim wraps memfs to model torn pages and lost directory operations.
//
// # Contract
//
// A Segment never grows, shrinks or moves once created, so a slice returned
// by View stays valid until the segment is closed. Callers that share a
// Segment between goroutines must only read ranges below a position that the
// writer has published after its WriteAt returned (the engine publishes write
// positions atomically). WriteAt, Sync and View may be called concurrently on
// disjoint ranges. Close must not be called while a View is in use; the engine
// reference-counts its segments to guarantee that.
//
// Names are slash-separated paths relative to the FS root.
package backend

import (
	"errors"
	"io/fs"
)

// Sentinel errors. Implementations wrap them (or the fs package's errors) with
// the path and operation so that callers can test with errors.Is.
var (
	// ErrNotExist reports a missing file or directory. It is fs.ErrNotExist,
	// so os.IsNotExist-style checks keep working.
	ErrNotExist = fs.ErrNotExist
	// ErrExist reports that Create found a file already there.
	ErrExist = fs.ErrExist
	// ErrRange reports an offset or length outside a segment.
	ErrRange = errors.New("backend: range outside segment")
	// ErrClosed reports use of a closed segment or FS.
	ErrClosed = errors.New("backend: closed")
	// ErrLocked reports that another process holds a lock file.
	ErrLocked = errors.New("backend: locked by another process")
	// ErrReadOnly reports a change attempted on a read-only FS.
	ErrReadOnly = errors.New("backend: read-only file system")
)

// FS is a file system of fixed-size segments.
type FS interface {
	// Create makes a new file of exactly size bytes (zero-filled,
	// preallocated where the backend can) and opens it for reading and
	// writing. It fails with ErrExist if the file exists. size may be 0.
	Create(name string, size int64) (Segment, error)
	// Open opens an existing file for reading and writing; its size is the
	// file's current size.
	Open(name string) (Segment, error)
	// Stat returns the size of a file, or an error wrapping ErrNotExist.
	Stat(name string) (size int64, err error)
	// Remove deletes a file. Removing a missing file returns an error
	// wrapping ErrNotExist.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// List returns the names (not paths) of the regular files directly in
	// dir, sorted. A missing dir yields an error wrapping ErrNotExist.
	List(dir string) ([]string, error)
	// ListDirs returns the names of the sub-directories of dir, sorted.
	ListDirs(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// RemoveAll deletes dir and everything below it.
	RemoveAll(dir string) error
	// SyncDir makes the creates, removes and renames done in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive, advisory, process-wide lock on the named
	// file (creating it), so that two processes never open one store for
	// writing. It fails with an error wrapping ErrLocked when another
	// holder exists. Unlock on the returned Unlocker releases it. A
	// read-only FS takes a shared lock instead, which keeps writers out
	// while it reads.
	Lock(name string) (Unlocker, error)
}

// Prefaulter is implemented by segments that can load their pages into
// memory ahead of use without dirtying them (mmap: MADV_POPULATE_READ). The
// pages still take a (minor) fault on their first write; the engine uses
// WritePrefaulter instead.
type Prefaulter interface {
	Prefault() error
}

// WritePrefaulter is implemented by segments that can map a range of their
// pages writable ahead of use (mmap: MADV_POPULATE_WRITE), so that the
// writes that follow take no page fault at all. The content is unchanged.
// The engine calls it in the background on a window just ahead of the
// CommitLog's write position; it is an optimisation only.
type WritePrefaulter interface {
	PrefaultWrite(off, n int64) error
}

// ReadPrefaulter is implemented by segments that can load a range of their
// pages and map them read-only ahead of use (mmap: MADV_POPULATE_READ on
// the range). The engine uses it instead of WritePrefaulter for a file it
// writes with Pwrite: reads through the mapping then take no fault, and
// the pages, never mapped writable, cost a sync no write-protection. It is
// an optimisation only.
type ReadPrefaulter interface {
	PrefaultRead(off, n int64) error
}

// Pwriter is implemented by segments that can also be written with
// pwrite(2) through the file, rather than by a copy into their mapping
// (mmap: pwritev(2)). What is written is visible to View at once (Linux's
// page cache is shared by a file's writes and its MAP_SHARED mappings) and
// is made durable by Sync, exactly as WriteAt's copy; it is lost on a power
// cut before that Sync, exactly as WriteAt's copy. The difference is the
// cost of a sync that follows every write (SYNC_FLUSH): a page written
// through a mapping is writable in the page tables, so writeback must
// write-protect it again (a TLB shootdown across CPUs) and the next write
// to it faults; a page written with pwrite is never mapped writable. The
// engine uses it for the CommitLog under SYNC_FLUSH; it is an optimisation,
// and segments without it are written with WriteAt.
type Pwriter interface {
	// Pwrite writes the pieces one after another from off, like WriteAt
	// of their concatenation, and returns the bytes written. Writing past
	// Size fails with ErrRange and writes nothing.
	Pwrite(pieces [][]byte, off int64) (int, error)
}

// FileReader is implemented by segments that can also read through the
// file instead of the mapping (mmap: pread), seeing the same bytes as
// View. Recovery's parsers read the CommitLog this way when it is the
// cheaper, which they measure: a pread copies from the page cache through
// the kernel's own mapping, while the first touch of each page of a fresh
// mapping takes a fault and a page-table update (on a virtual machine,
// microseconds a page, more for pages some minutes old).
type FileReader interface {
	ReadFile(p []byte, off int64) (int, error)
}

// Unlocker releases a lock taken with FS.Lock.
type Unlocker interface {
	Unlock() error
}

// Segment is one fixed-size file.
type Segment interface {
	// Name returns the path the segment was created or opened with.
	Name() string
	// Size returns the fixed size of the segment.
	Size() int64
	// View returns the n bytes at off without copying. The slice must be
	// treated as read-only and stays valid until Close. It returns nil if
	// the range is outside the segment.
	View(off, n int64) []byte
	// WriteAt copies p to off. It is the only way to modify a segment.
	// Writing past Size fails with ErrRange and writes nothing.
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes the bytes in [off, off+n) durable (at page granularity:
	// whole pages touching the range may be written). n == 0 is a no-op.
	Sync(off, n int64) error
	// Close releases the segment. Views become invalid. It does not make
	// data durable (Sync does); closing again returns nil.
	Close() error
}
