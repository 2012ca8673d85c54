// Package snapshot opens a store without changing it: an overlay
// backend.FS whose reads come from a base FS (typically a read-only
// backend/mmap FS) and whose changes — recovery's tail zeroing, rebuilt
// ConsumeQueues, a new checkpoint — stay in memory and vanish on exit.
//
// Inspection tools (rocketstore read, stats, verify) use it so that they
// can recover and read a store that is not theirs to write: the files on
// disk are never rewritten. A base file is copied into memory only when
// something writes to it; until then views point into the base mapping.
package snapshot

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

// FS is the overlay. It is safe for concurrent use.
type FS struct {
	base  backend.FS
	upper *memfs.FS

	mu          sync.Mutex
	deleted     map[string]bool // base files hidden by Remove or Rename
	deletedDirs []string        // base directories hidden by RemoveAll, with a trailing "/"
}

var _ backend.FS = (*FS)(nil)

// New returns an overlay on base. base is only read (and locked).
func New(base backend.FS) *FS {
	return &FS{base: base, upper: memfs.New(nil), deleted: map[string]bool{}}
}

func clean(name string) string { return path.Clean("/" + name)[1:] }

// inBase reports whether name is visible from the base.
func (o *FS) inBase(name string) bool {
	o.mu.Lock()
	hidden := o.deleted[name]
	for _, d := range o.deletedDirs {
		hidden = hidden || strings.HasPrefix(name, d)
	}
	o.mu.Unlock()
	if hidden {
		return false
	}
	_, err := o.base.Stat(name)
	return err == nil
}

func (o *FS) inUpper(name string) bool {
	_, err := o.upper.Stat(name)
	return err == nil
}

// Create makes a new in-memory file.
func (o *FS) Create(name string, size int64) (backend.Segment, error) {
	name = clean(name)
	if o.inBase(name) {
		return nil, fmt.Errorf("snapshot: create %s: %w", name, backend.ErrExist)
	}
	if err := o.upper.MkdirAll(path.Dir(name)); err != nil {
		return nil, err
	}
	return o.upper.Create(name, size)
}

// Open opens the in-memory file, or else a copy-on-write view of the base
// file.
func (o *FS) Open(name string) (backend.Segment, error) {
	name = clean(name)
	if o.inUpper(name) {
		return o.upper.Open(name)
	}
	if !o.inBase(name) {
		return nil, fmt.Errorf("snapshot: open %s: %w", name, backend.ErrNotExist)
	}
	seg, err := o.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &cowSegment{base: seg}, nil
}

// Stat returns a file's size.
func (o *FS) Stat(name string) (int64, error) {
	name = clean(name)
	if size, err := o.upper.Stat(name); err == nil {
		return size, nil
	}
	if !o.inBase(name) {
		return 0, fmt.Errorf("snapshot: stat %s: %w", name, backend.ErrNotExist)
	}
	return o.base.Stat(name)
}

// Remove hides a file.
func (o *FS) Remove(name string) error {
	name = clean(name)
	found := false
	if o.inUpper(name) {
		if err := o.upper.Remove(name); err != nil {
			return err
		}
		found = true
	}
	if o.inBase(name) {
		o.mu.Lock()
		o.deleted[name] = true
		o.mu.Unlock()
		found = true
	}
	if !found {
		return fmt.Errorf("snapshot: remove %s: %w", name, backend.ErrNotExist)
	}
	return nil
}

// Rename moves a file; a base file is copied into memory first.
func (o *FS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	if err := o.upper.MkdirAll(path.Dir(newname)); err != nil {
		return err
	}
	if !o.inUpper(oldname) {
		if err := o.copyUp(oldname); err != nil {
			return err
		}
	}
	if err := o.upper.Rename(oldname, newname); err != nil {
		return err
	}
	o.mu.Lock()
	o.deleted[oldname] = true
	delete(o.deleted, newname)
	o.mu.Unlock()
	return nil
}

// copyUp copies a base file into the upper layer under the same name.
func (o *FS) copyUp(name string) error {
	data, err := backend.ReadFile(o.base, name)
	if err != nil {
		return err
	}
	if err := o.upper.MkdirAll(path.Dir(name)); err != nil {
		return err
	}
	seg, err := o.upper.Create(name, int64(len(data)))
	if err != nil {
		return err
	}
	_, err = seg.WriteAt(data, 0)
	return errors.Join(err, seg.Close())
}

// List returns the visible files of dir.
func (o *FS) List(dir string) ([]string, error) {
	return o.union(clean(dir), o.base.List, o.upper.List, func(n string) bool { return o.inBase(path.Join(clean(dir), n)) })
}

// ListDirs returns the visible sub-directories of dir.
func (o *FS) ListDirs(dir string) ([]string, error) {
	d := clean(dir)
	return o.union(d, o.base.ListDirs, o.upper.ListDirs, func(n string) bool { return !o.dirHidden(path.Join(d, n)) })
}

func (o *FS) dirHidden(dir string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.deletedDirs {
		if strings.HasPrefix(dir+"/", d) {
			return true
		}
	}
	return false
}

func (o *FS) union(dir string, base, upper func(string) ([]string, error), visible func(string) bool) ([]string, error) {
	var out []string
	bn, berr := base(dir)
	if berr == nil && !o.dirHidden(dir) {
		for _, n := range bn {
			if visible(n) {
				out = append(out, n)
			}
		}
	}
	un, uerr := upper(dir)
	if uerr == nil {
		out = append(out, un...)
	}
	if (berr != nil || o.dirHidden(dir)) && uerr != nil {
		return nil, fmt.Errorf("snapshot: list %s: %w", dir, backend.ErrNotExist)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// MkdirAll creates dir in memory.
func (o *FS) MkdirAll(dir string) error { return o.upper.MkdirAll(clean(dir)) }

// RemoveAll hides dir and removes its in-memory files.
func (o *FS) RemoveAll(dir string) error {
	d := clean(dir)
	if err := o.upper.RemoveAll(d); err != nil {
		return err
	}
	o.mu.Lock()
	o.deletedDirs = append(o.deletedDirs, d+"/")
	o.mu.Unlock()
	return nil
}

// SyncDir does nothing (nothing here is meant to last) beyond checking that
// dir exists.
func (o *FS) SyncDir(dir string) error {
	if _, err := o.ListDirs(dir); err != nil {
		return fmt.Errorf("snapshot: syncdir %s: %w", dir, backend.ErrNotExist)
	}
	return nil
}

// Lock locks the base (a read-only mmap FS takes a shared lock), or the
// in-memory layer for a directory that exists only there.
func (o *FS) Lock(name string) (backend.Unlocker, error) {
	name = clean(name)
	u, err := o.base.Lock(name)
	if errors.Is(err, backend.ErrNotExist) {
		return o.upper.Lock(name)
	}
	return u, err
}

// cowSegment reads the base segment until the first write, which copies it
// into memory.
type cowSegment struct {
	base backend.Segment
	mu   sync.Mutex
	copy atomic.Pointer[[]byte]
}

func (s *cowSegment) Name() string { return s.base.Name() }
func (s *cowSegment) Size() int64  { return s.base.Size() }

func (s *cowSegment) View(off, n int64) []byte {
	if p := s.copy.Load(); p != nil {
		b := *p
		if off < 0 || n < 0 || off > int64(len(b))-n {
			return nil
		}
		return b[off : off+n : off+n]
	}
	return s.base.View(off, n)
}

func (s *cowSegment) WriteAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off < 0 || off > s.Size()-int64(len(p)) {
		return 0, fmt.Errorf("snapshot: write %s at %d: %w", s.Name(), off, backend.ErrRange)
	}
	if s.copy.Load() == nil {
		b := make([]byte, s.Size())
		copy(b, s.base.View(0, s.Size()))
		s.copy.Store(&b)
	}
	return copy((*s.copy.Load())[off:], p), nil
}

// Pwrite is WriteAt of the pieces' concatenation (backend.Pwriter), so
// that a store opened on a snapshot writes the way it writes elsewhere.
func (s *cowSegment) Pwrite(pieces [][]byte, off int64) (int, error) {
	total := int64(0)
	for _, p := range pieces {
		total += int64(len(p))
	}
	if off < 0 || off > s.Size()-total {
		return 0, fmt.Errorf("snapshot: write %s at %d: %w", s.Name(), off, backend.ErrRange)
	}
	n := 0
	for _, p := range pieces {
		w, err := s.WriteAt(p, off+int64(n))
		n += w
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *cowSegment) Sync(int64, int64) error { return nil }
func (s *cowSegment) Close() error            { return s.base.Close() }
