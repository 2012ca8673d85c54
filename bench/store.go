package bench

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
)

// Backend names.
const (
	Mmap  = "mmap"
	Memfs = "memfs"
)

// env is where a workload puts its files.
type env struct {
	spec Spec
	// dir is the parent of every temporary directory ("" = os.TempDir()).
	dir string
}

// tempDir makes a directory for one store or baseline; the caller removes
// it.
func (e env) tempDir(pattern string) (string, error) {
	return os.MkdirTemp(e.dir, "rocketstore-bench-"+pattern+"-")
}

// benchStore is an open store with what it takes to remove it.
type benchStore struct {
	*engine.Store
	fs      backend.FS
	dir     string // mmap only
	cfg     engine.Config
	syncs   *syncCounter
	arrived chan struct{}
}

// openStore opens a new, empty store on backend name.
func (e env) openStore(name string, cfg engine.Config) (*benchStore, error) {
	bs := &benchStore{syncs: &syncCounter{}, arrived: make(chan struct{}, 1)}
	switch name {
	case Mmap:
		dir, err := e.tempDir("store")
		if err != nil {
			return nil, err
		}
		fs, err := mmap.New(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		bs.fs, bs.dir = fs, dir
	case Memfs:
		bs.fs = memfs.New(afero.NewMemMapFs())
		if e.spec.MemfsFileSize > 0 {
			cfg.CommitLogFileSize = e.spec.MemfsFileSize
		}
	default:
		return nil, fmt.Errorf("bench: unknown backend %q", name)
	}
	bs.cfg = cfg
	if err := bs.reopen(cfg); err != nil {
		bs.remove()
		return nil, err
	}
	return bs, nil
}

// reopen opens the store on bs's files (after a close).
func (bs *benchStore) reopen(cfg engine.Config) error {
	if cfg.CommitLogFileSize == 0 {
		return fmt.Errorf("bench: no CommitLogFileSize")
	}
	fs := bs.fs
	if cfg.FlushDiskType == engine.SyncFlush {
		// Only sync runs pay for the wrapper's extra indirection.
		fs = countingFS{bs.fs, bs.syncs}
	}
	s, err := engine.Open(fs, cfg, dispatch.DispatcherFunc(bs.arrival))
	if err != nil {
		return err
	}
	bs.Store = s
	return nil
}

// arrival is the arrival listener that wakes the benchmark's consumer,
// as a long-poll hold service would be woken.
func (bs *benchStore) arrival(*dispatch.Request) error {
	select {
	case bs.arrived <- struct{}{}:
	default:
	}
	return nil
}

// remove closes the store (if open) and deletes its files.
func (bs *benchStore) remove() error {
	var err error
	if bs.Store != nil {
		err = bs.Store.Close()
	}
	if bs.dir != "" {
		if rerr := os.RemoveAll(bs.dir); err == nil {
			err = rerr
		}
	}
	return err
}

// syncCounter counts CommitLog syncs and the bytes they cover, which gives
// the batch size that group commit achieved.
type syncCounter struct {
	syncs atomic.Int64
	bytes atomic.Int64
}

func (c *syncCounter) reset() { c.syncs.Store(0); c.bytes.Store(0) }

// countingFS wraps a backend to count the CommitLog's syncs.
type countingFS struct {
	backend.FS
	c *syncCounter
}

func (f countingFS) Create(name string, size int64) (backend.Segment, error) {
	seg, err := f.FS.Create(name, size)
	return f.wrap(name, seg), err
}

func (f countingFS) Open(name string) (backend.Segment, error) {
	seg, err := f.FS.Open(name)
	return f.wrap(name, seg), err
}

func (f countingFS) wrap(name string, seg backend.Segment) backend.Segment {
	if seg == nil || !strings.HasPrefix(name, "commitlog/") {
		return seg
	}
	return countingSegment{seg, f.c}
}

type countingSegment struct {
	backend.Segment
	c *syncCounter
}

func (s countingSegment) Sync(off, n int64) error {
	if n > 0 {
		s.c.syncs.Add(1)
		s.c.bytes.Add(n)
	}
	return s.Segment.Sync(off, n)
}

// PrefaultWrite passes the engine's write-ahead prefault through, so that a
// sync-flush run pays the same page faults as an async one (the wrapper
// must not hide the backend's capabilities).
func (s countingSegment) PrefaultWrite(off, n int64) error {
	if p, ok := s.Segment.(backend.WritePrefaulter); ok {
		return p.PrefaultWrite(off, n)
	}
	return nil
}

// Pwrite passes the backend's pwrite through: the engine writes the
// CommitLog with it under SYNC_FLUSH, which is what this wrapper measures.
func (s countingSegment) Pwrite(pieces [][]byte, off int64) (int, error) {
	if p, ok := s.Segment.(backend.Pwriter); ok {
		return p.Pwrite(pieces, off)
	}
	n := 0
	for _, p := range pieces {
		w, err := s.Segment.WriteAt(p, off+int64(n))
		n += w
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// PrefaultRead passes the ranged read prefault through (the engine's
// write-ahead window for a CommitLog written with Pwrite).
func (s countingSegment) PrefaultRead(off, n int64) error {
	if p, ok := s.Segment.(backend.ReadPrefaulter); ok {
		return p.PrefaultRead(off, n)
	}
	return nil
}

// Prefault passes read-prefaulting through.
func (s countingSegment) Prefault() error {
	if p, ok := s.Segment.(backend.Prefaulter); ok {
		return p.Prefault()
	}
	return nil
}

// Advise passes madvise hints through to mmap segments.
func (s countingSegment) Advise(advice int) error {
	if a, ok := s.Segment.(mmap.Adviser); ok {
		return a.Advise(advice)
	}
	return nil
}
