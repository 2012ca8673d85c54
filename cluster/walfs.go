package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// spareName is the pre-zeroed segment file waiting in the WAL directory.
// raft-wal only considers names ending in ".wal", and zeroFS.ListDir
// hides it as well.
const spareName = "zero-spare.tmp"

// zeroChunk is the size of one zero-filling write.
const zeroChunk = 1 << 20

// zeroFS is raft-wal's file system with one change: Create hands out a
// segment file that was zero-filled and fsynced ahead of time by a
// background goroutine. raft-wal preallocates a new segment with
// fallocate, which leaves unwritten extents: every later write+fsync into
// them also journals the extent conversion, which measurably lengthens
// each Raft round (BENCHMARKS.md). A written, zero-filled file has no
// such cost, and reads as zeros past the written frames, which is all
// raft-wal needs of a new segment.
//
// The spare is prepared once the current tail segment is half written,
// so a short-lived log never pays for zero-filling a whole segment. When
// no spare is ready, Create falls back to raft-wal's behaviour: the log
// writer never waits for zero-filling.
type zeroFS struct {
	*fs.FS
	dir  string
	size uint64
	log  *slog.Logger

	mu    sync.Mutex
	ready bool // the spare is complete and fsynced

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	taken, fallbacks, errs atomic.Uint64
	closeOnce              sync.Once
}

var _ types.VFS = (*zeroFS)(nil)

// newZeroFS serves the WAL directory dir, whose segments are size bytes.
// A leftover spare from an earlier run is removed: nothing says it was
// completed.
func newZeroFS(dir string, size uint64, log *slog.Logger) (*zeroFS, error) {
	if err := os.Remove(filepath.Join(dir, spareName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: remove the stale spare segment: %w", err)
	}
	z := &zeroFS{FS: fs.New(), dir: dir, size: size, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go z.run()
	return z, nil
}

// ListDir lists dir like raft-wal's FS but without the spare.
func (z *zeroFS) ListDir(dir string) ([]string, error) {
	names, err := z.FS.ListDir(dir)
	out := names[:0]
	for _, n := range names {
		if n != spareName {
			out = append(out, n)
		}
	}
	return out, err
}

// Create takes the spare if one is ready for this directory and size,
// otherwise it creates the file as raft-wal does.
func (z *zeroFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if dir == z.dir && size == z.size && z.take() {
		wf, err := z.takeSpare(dir, name)
		if err == nil || errors.Is(err, os.ErrExist) {
			return wf, err
		}
		z.failed(fmt.Errorf("take the spare: %w", err))
	}
	z.fallbacks.Add(1)
	wf, err := z.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return z.watch(wf), nil
}

// takeSpare gives the claimed spare the segment's name.
func (z *zeroFS) takeSpare(dir, name string) (types.WritableFile, error) {
	spare, path := filepath.Join(dir, spareName), filepath.Join(dir, name)
	// Link fails if name exists, as O_EXCL does in raft-wal's Create; the
	// spare then stays ready.
	if err := os.Link(spare, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			z.mu.Lock()
			z.ready = true
			z.mu.Unlock()
		}
		return nil, err
	}
	if err := os.Remove(spare); err != nil {
		return nil, errors.Join(err, os.Remove(path))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, errors.Join(err, os.Remove(path))
	}
	z.taken.Add(1)
	// The new name is durable once the directory is fsynced, which
	// newFile does on the first Sync, before any data in it is
	// acknowledged (as raft-wal's own File does).
	return z.watch(&newFile{File: f, dir: dir}), nil
}

// OpenWriter opens a recovered tail segment, watched like a new one.
func (z *zeroFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	wf, err := z.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return z.watch(wf), nil
}

// take claims the spare if it is ready.
func (z *zeroFS) take() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	ok := z.ready
	z.ready = false
	return ok
}

// watch asks for the next spare once wf is half written.
func (z *zeroFS) watch(wf types.WritableFile) types.WritableFile {
	return &tailFile{WritableFile: wf, half: int64(z.size / 2), z: z}
}

// Close stops the background goroutine and removes the spare.
func (z *zeroFS) Close() error {
	z.closeOnce.Do(func() { close(z.stop) })
	<-z.done
	if err := os.Remove(filepath.Join(z.dir, spareName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: remove the spare segment: %w", err)
	}
	return nil
}

// run prepares a spare each time it is asked and none is ready.
func (z *zeroFS) run() {
	defer close(z.done)
	for {
		select {
		case <-z.stop:
			return
		case <-z.kick:
		}
		z.mu.Lock()
		ready := z.ready
		z.mu.Unlock()
		if ready {
			continue
		}
		if err := z.prepare(); err != nil {
			if errors.Is(err, errStopped) {
				return
			}
			// The next Create falls back to fallocate; the next half-full
			// segment retries.
			z.failed(err)
		}
	}
}

// failed counts and logs an error; new segments are then fallocated.
func (z *zeroFS) failed(err error) {
	z.errs.Add(1)
	z.log.Warn("cluster: cannot use a zero-filled Raft log segment; new segments are fallocated",
		"dir", z.dir, "err", err, "errors", z.errs.Load())
}

var errStopped = errors.New("stopped")

// prepare writes a zero-filled, fsynced spare of z.size bytes.
func (z *zeroFS) prepare() (err error) {
	path := filepath.Join(z.dir, spareName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			err = errors.Join(err, removeIfExists(path))
		}
	}()
	zero := make([]byte, zeroChunk)
	for off := uint64(0); off < z.size; off += zeroChunk {
		select {
		case <-z.stop:
			return errStopped
		default:
		}
		n := min(z.size-off, zeroChunk)
		if _, err := f.WriteAt(zero[:n], int64(off)); err != nil {
			return fmt.Errorf("zero-fill %s at %d: %w", path, off, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	z.mu.Lock()
	z.ready = true
	z.mu.Unlock()
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// newFile is a renamed spare: its first Sync also fsyncs the directory,
// so the new name is durable before the first data written to it is.
type newFile struct {
	*os.File
	dir    string
	synced atomic.Bool
}

// Sync fsyncs the file, and the directory the first time.
func (f *newFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.synced.Load() {
		return nil
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	err = errors.Join(d.Sync(), d.Close())
	if err == nil {
		f.synced.Store(true)
	}
	return err
}

// tailFile wakes the spare preparation once a write reaches half the
// segment.
type tailFile struct {
	types.WritableFile
	half   int64
	z      *zeroFS
	kicked atomic.Bool
}

// WriteAt writes and, past half the segment, asks for the next spare.
func (t *tailFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := t.WritableFile.WriteAt(p, off)
	if off+int64(n) >= t.half && !t.kicked.Swap(true) {
		select {
		case t.z.kick <- struct{}{}:
		default:
		}
	}
	return n, err
}

var _ io.WriterAt = (*tailFile)(nil)
