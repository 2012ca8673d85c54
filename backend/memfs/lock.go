package memfs

import (
	"os"

	"github.com/rocketstore/rocketstore/backend"
)

// Lock creates the named file if needed and enters it in the FS's lock
// table. The lock is in-process only: it excludes other users of the same
// FS value, which is how tests open one store twice, but not other
// processes.
func (f *FS) Lock(name string) (backend.Unlocker, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.mu.locks[p]; held {
		return nil, pathErr("lock", name, backend.ErrLocked)
	}
	if err := f.checkParent(p); err != nil {
		return nil, pathErr("lock", name, err)
	}
	file, err := f.afs.OpenFile(native(p), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	if err := file.Close(); err != nil {
		return nil, pathErr("lock", name, err)
	}
	f.mu.locks[p] = struct{}{}
	return &lock{fs: f, path: p}, nil
}

// lock is a held entry of the lock table.
type lock struct {
	fs   *FS
	path string
	done bool // guarded by fs.mu
}

// Unlock releases the lock. Unlocking again does nothing.
func (l *lock) Unlock() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if !l.done {
		l.done = true
		delete(l.fs.mu.locks, l.path)
	}
	return nil
}
