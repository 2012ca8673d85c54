package memfs

import (
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.FS = (*FS)(nil)

// FS is a backend.FS over an afero.Fs. Create it with New; it is safe for
// concurrent use.
type FS struct {
	afs afero.Fs

	// mu guards the FS tables and serialises namespace changes with them,
	// so that a volatile page never ends up under a name that no longer
	// holds its file. Lock order: FS.mu, then segment.syncMu, then
	// segment.mu.
	mu struct {
		sync.Mutex
		// open holds the open segments, whose dirty pages DirtyPages
		// reports and whose paths Rename and Remove update.
		open map[*segment]struct{}
		// closed holds the dirty pages that closed segments left in the
		// page cache, by canonical name and page index.
		closed map[string]map[int64][]byte
		// locks holds the canonical names locked with Lock.
		locks map[string]struct{}
	}
}

// New returns an FS whose durable image lives in afs; nil means a fresh
// afero.NewMemMapFs(). Files already in afs are its durable content.
func New(afs afero.Fs) *FS {
	if afs == nil {
		afs = afero.NewMemMapFs()
	}
	f := &FS{afs: afs}
	f.mu.open = make(map[*segment]struct{})
	f.mu.closed = make(map[string]map[int64][]byte)
	f.mu.locks = make(map[string]struct{})
	return f
}

// Afero returns the afero.Fs that holds the durable image. Passing it to
// New after abandoning f models a power cut.
func (f *FS) Afero() afero.Fs { return f.afs }

// Create makes a zero-filled file of size bytes and opens it.
func (f *FS) Create(name string, size int64) (backend.Segment, error) {
	if size < 0 {
		return nil, pathErr("create", name, fs.ErrInvalid)
	}
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	// MemMapFs invents missing parents; check, so that a store that forgot
	// MkdirAll fails here as it would on a real disk.
	if err := f.checkParent(p); err != nil {
		return nil, pathErr("create", name, err)
	}
	file, err := f.afs.OpenFile(native(p), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	if err := file.Truncate(size); err != nil {
		_ = file.Close()
		_ = f.afs.Remove(native(p))
		return nil, pathErr("create", name, err)
	}
	delete(f.mu.closed, p) // stale: the file these pages belonged to is gone
	s := newSegment(f, name, p, file, make([]byte, size))
	f.mu.open[s] = struct{}{}
	return s, nil
}

// Open reads the durable image of an existing file into a new page cache,
// together with the unsynced pages it had when last closed through f.
func (f *FS) Open(name string) (backend.Segment, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := f.afs.OpenFile(native(p), os.O_RDWR, 0)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	buf, err := readAll(file)
	if err != nil {
		_ = file.Close()
		return nil, pathErr("open", name, err)
	}
	s := newSegment(f, name, p, file, buf)
	if pages := f.mu.closed[p]; pages != nil {
		s.adopt(pages)
		delete(f.mu.closed, p)
	}
	f.mu.open[s] = struct{}{}
	return s, nil
}

// readAll reads a whole regular file from a fresh handle.
func readAll(file afero.File) ([]byte, error) {
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, errIsDir
	}
	buf := make([]byte, info.Size())
	if _, err := io.ReadFull(file, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Stat returns the size of a regular file.
func (f *FS) Stat(name string) (int64, error) {
	info, err := f.afs.Stat(native(clean(name)))
	if err != nil {
		return 0, pathErr("stat", name, err)
	}
	if info.IsDir() {
		return 0, pathErr("stat", name, errIsDir)
	}
	return info.Size(), nil
}

// Remove deletes a file or an empty directory and drops its unsynced pages.
func (f *FS) Remove(name string) error {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := f.afs.Stat(native(p))
	if err != nil {
		return pathErr("remove", name, err)
	}
	if info.IsDir() {
		// MemMapFs would remove a non-empty directory and orphan its
		// children; refuse as the OS does.
		names, err := afero.ReadDir(f.afs, native(p))
		if err != nil {
			return pathErr("remove", name, err)
		}
		if len(names) > 0 {
			return pathErr("remove", name, errNotEmpty)
		}
	}
	if err := f.afs.Remove(native(p)); err != nil {
		return pathErr("remove", name, err)
	}
	f.forget(p)
	return nil
}

// Rename atomically replaces newname with oldname. Unsynced pages and open
// segments follow the file (or, for a directory, the files below it).
func (f *FS) Rename(oldname, newname string) error {
	op, np := clean(oldname), clean(newname)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkParent(np); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: cause(err)}
	}
	if op == np {
		// afero accepts renaming a missing file onto itself; the OS does not.
		if _, err := f.afs.Stat(native(op)); err != nil {
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: cause(err)}
		}
		return nil
	}
	if err := f.afs.Rename(native(op), native(np)); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: cause(err)}
	}
	f.forget(np) // the replaced file, if any, is unlinked
	f.move(op, np)
	return nil
}

// List returns the sorted names of the regular files in dir.
func (f *FS) List(dir string) ([]string, error) {
	return f.readDir("list", dir, false)
}

// ListDirs returns the sorted names of the sub-directories of dir.
func (f *FS) ListDirs(dir string) ([]string, error) {
	return f.readDir("listdirs", dir, true)
}

func (f *FS) readDir(op, dir string, dirs bool) ([]string, error) {
	infos, err := afero.ReadDir(f.afs, native(clean(dir)))
	if err != nil {
		return nil, pathErr(op, dir, err)
	}
	names := []string{}
	for _, info := range infos {
		if info.IsDir() == dirs {
			names = append(names, info.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll creates dir and its parents.
func (f *FS) MkdirAll(dir string) error {
	if err := f.afs.MkdirAll(native(clean(dir)), 0o755); err != nil {
		return pathErr("mkdir", dir, err)
	}
	return nil
}

// RemoveAll deletes dir and everything below it, with their unsynced pages.
// A missing dir is not an error.
func (f *FS) RemoveAll(dir string) error {
	p := clean(dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.removeAll(p); err != nil {
		return pathErr("removeall", dir, err)
	}
	f.forget(p)
	return nil
}

func (f *FS) removeAll(p string) error {
	if p != "." {
		return f.afs.RemoveAll(native(p))
	}
	// MemMapFs.RemoveAll("/") would delete the root directory entry too;
	// empty the root instead.
	infos, err := afero.ReadDir(f.afs, ".")
	if err != nil {
		return err
	}
	for _, info := range infos {
		if err := f.afs.RemoveAll(info.Name()); err != nil {
			return err
		}
	}
	return nil
}

// SyncDir passes a directory sync to afero: an fsync on an OsFs, nothing on
// a MemMapFs, whose directory operations are durable at once.
func (f *FS) SyncDir(dir string) error {
	d, err := f.afs.Open(native(clean(dir)))
	if err != nil {
		return pathErr("syncdir", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pathErr("syncdir", dir, err)
	}
	return nil
}

// checkParent fails unless the parent directory of p exists.
func (f *FS) checkParent(p string) error {
	dir := path.Dir(p)
	if dir == "." {
		return nil
	}
	info, err := f.afs.Stat(native(dir))
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return errNotDir
	}
	return nil
}
