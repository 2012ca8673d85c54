package mmap

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

// lockFile is a held flock(2) lock; the open file is what holds it.
type lockFile struct {
	path     string
	f        *os.File
	released atomic.Bool
}

// Lock creates the named file if needed (leaving any content alone) and
// takes an exclusive flock on it without waiting. flock locks belong to the
// open file description, so a second Lock of the same file is refused even
// from this process, with an error wrapping backend.ErrLocked. The kernel
// drops the lock if the process dies, so no stale lock outlives a crash.
func (fsys *FS) Lock(name string) (backend.Unlocker, error) {
	p, err := fsys.path("lock", name)
	if err != nil {
		return nil, err
	}
	flag, how := os.O_RDWR|os.O_CREATE, unix.LOCK_EX
	if fsys.readOnly {
		flag, how = os.O_RDONLY, unix.LOCK_SH
	}
	f, err := os.OpenFile(p, flag, filePerm)
	if fsys.readOnly && errors.Is(err, os.ErrNotExist) {
		// No lock file: no writer has ever opened this store.
		return &lockFile{path: p}, nil
	}
	if err != nil {
		return nil, wrap("lock", p, err)
	}
	if err := flock(f, how|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			err = backend.ErrLocked
		}
		return nil, fmt.Errorf("mmap: lock %s: %w", p, err)
	}
	return &lockFile{path: p, f: f}, nil
}

// Unlock releases the lock and closes the file. Calls after the first return
// nil.
func (l *lockFile) Unlock() error {
	if l.released.Swap(true) || l.f == nil {
		return nil
	}
	// Closing alone would release the lock too; unlocking first reports a
	// failure to release instead of hiding it in Close.
	err := errors.Join(flock(l.f, unix.LOCK_UN), l.f.Close())
	if err != nil {
		return fmt.Errorf("mmap: unlock %s: %w", l.path, err)
	}
	return nil
}

// flock calls flock(2), retrying if a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}
