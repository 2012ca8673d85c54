package mmap

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rocketstore/rocketstore/backend"
)

// FS is a backend.FS over a directory of the operating system's file system.
// Names are slash-separated and relative to the root; they may not leave it.
type FS struct {
	root     string
	readOnly bool
}

var _ backend.FS = (*FS)(nil)

const (
	dirPerm  = 0o755
	filePerm = 0o644
)

// New returns an FS rooted at root, creating the directory if needed.
func New(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, wrap("new", root, err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, wrap("new", abs, err)
	}
	return &FS{root: abs}, nil
}

// NewReadOnly returns an FS over an existing directory that never changes
// it: files are opened and mapped read-only, every change fails with
// backend.ErrReadOnly, and Lock takes a shared lock (so a writer holding
// the store's lock keeps readers out, and the other way round). Inspection
// tools wrap it in backend/snapshot to recover a store in memory.
func NewReadOnly(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, wrap("new", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, wrap("new", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("mmap: new %s: not a directory: %w", abs, backend.ErrNotExist)
	}
	return &FS{root: abs, readOnly: true}, nil
}

// checkWritable refuses changes to a read-only FS.
func (fsys *FS) checkWritable(op, name string) error {
	if fsys.readOnly {
		return fmt.Errorf("mmap: %s %s: %w", op, name, backend.ErrReadOnly)
	}
	return nil
}

// Root returns the absolute path of the directory the FS is rooted at.
func (fsys *FS) Root() string { return fsys.root }

// path maps a name to an operating-system path. "" and "." name the root.
// Names that would escape the root are refused rather than cleaned, since
// they can only come from a bug.
func (fsys *FS) path(op, name string) (string, error) {
	if name == "" {
		return fsys.root, nil
	}
	local := filepath.FromSlash(name)
	if !filepath.IsLocal(local) {
		return "", fmt.Errorf("mmap: %s %q: name outside the root: %w", op, name, fs.ErrInvalid)
	}
	return filepath.Join(fsys.root, local), nil
}

// Create makes a new file of exactly size bytes, preallocated and zero-filled,
// and maps it. It fails with an error wrapping backend.ErrExist if the file
// exists.
func (fsys *FS) Create(name string, size int64) (backend.Segment, error) {
	if err := fsys.checkWritable("create", name); err != nil {
		return nil, err
	}
	p, err := fsys.path("create", name)
	if err != nil {
		return nil, err
	}
	return createSegment(name, p, size)
}

// Open maps an existing regular file; its size is the file's current size.
func (fsys *FS) Open(name string) (backend.Segment, error) {
	p, err := fsys.path("open", name)
	if err != nil {
		return nil, err
	}
	return openSegment(name, p, fsys.readOnly)
}

// Stat returns the size of a regular file. A missing file or a directory
// yields an error wrapping backend.ErrNotExist.
func (fsys *FS) Stat(name string) (int64, error) {
	p, err := fsys.path("stat", name)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, wrap("stat", p, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, notRegular("stat", p)
	}
	return fi.Size(), nil
}

// Remove deletes a file.
func (fsys *FS) Remove(name string) error {
	if err := fsys.checkWritable("remove", name); err != nil {
		return err
	}
	p, err := fsys.path("remove", name)
	if err != nil {
		return err
	}
	return wrap("remove", p, os.Remove(p))
}

// Rename atomically replaces newname with oldname.
func (fsys *FS) Rename(oldname, newname string) error {
	if err := fsys.checkWritable("rename", oldname); err != nil {
		return err
	}
	oldp, err := fsys.path("rename", oldname)
	if err != nil {
		return err
	}
	newp, err := fsys.path("rename", newname)
	if err != nil {
		return err
	}
	return wrap("rename", oldp+" -> "+newp, os.Rename(oldp, newp))
}

// List returns the sorted names of the regular files directly in dir.
func (fsys *FS) List(dir string) ([]string, error) {
	return fsys.readDir("list", dir, fs.FileMode.IsRegular)
}

// ListDirs returns the sorted names of the sub-directories of dir.
func (fsys *FS) ListDirs(dir string) ([]string, error) {
	return fsys.readDir("listdirs", dir, fs.FileMode.IsDir)
}

// readDir lists the entries of dir whose type satisfies keep. The entry type
// comes from the directory itself, so symbolic links are neither files nor
// directories here.
func (fsys *FS) readDir(op, dir string, keep func(fs.FileMode) bool) ([]string, error) {
	p, err := fsys.path(op, dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, wrap(op, p, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries { // sorted by name, as the contract wants
		if keep(e.Type()) && !strings.HasSuffix(e.Name(), creatingSuffix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// MkdirAll creates dir and any missing parents.
func (fsys *FS) MkdirAll(dir string) error {
	if err := fsys.checkWritable("mkdirall", dir); err != nil {
		return err
	}
	p, err := fsys.path("mkdirall", dir)
	if err != nil {
		return err
	}
	return wrap("mkdirall", p, os.MkdirAll(p, dirPerm))
}

// RemoveAll deletes dir and everything below it; a missing dir is not an
// error. It refuses to remove the root itself, which would leave the FS
// without a directory to work in.
func (fsys *FS) RemoveAll(dir string) error {
	if err := fsys.checkWritable("removeall", dir); err != nil {
		return err
	}
	p, err := fsys.path("removeall", dir)
	if err != nil {
		return err
	}
	if p == fsys.root {
		return fmt.Errorf("mmap: removeall %s: refusing to remove the root: %w", p, fs.ErrInvalid)
	}
	return wrap("removeall", p, os.RemoveAll(p))
}

// SyncDir fsyncs dir, which makes the creates, removes and renames of its
// entries durable; without it a crash may undo them even after the files'
// own data was synced.
func (fsys *FS) SyncDir(dir string) error {
	p, err := fsys.path("syncdir", dir)
	if err != nil {
		return err
	}
	d, err := os.Open(p)
	if err != nil {
		return wrap("syncdir", p, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return wrap("syncdir", p, err)
}

// wrap returns nil for a nil err, and otherwise err prefixed with the package,
// operation and path. The *fs.PathError or *os.LinkError that the os package
// adds is dropped so that the path is not printed twice; the errno it held
// still satisfies errors.Is(err, backend.ErrNotExist) and the like.
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case *fs.PathError:
		err = e.Err
	case *os.LinkError:
		err = e.Err
	}
	return fmt.Errorf("mmap: %s %s: %w", op, path, err)
}

// notRegular reports a directory or special file where a regular file was
// wanted. It wraps backend.ErrNotExist because, to this FS, only regular
// files exist as files: List does not show the others either.
func notRegular(op, path string) error {
	return fmt.Errorf("mmap: %s %s: not a regular file: %w", op, path, backend.ErrNotExist)
}
