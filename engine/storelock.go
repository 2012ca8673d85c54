package engine

import (
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
)

// ErrStoreLocked reports a store whose lock file another process (or
// another open store of this process) holds. It wraps backend.ErrLocked.
var ErrStoreLocked = fmt.Errorf("engine: store is locked, in use by another process (its lock file is held); stop it first: %w", backend.ErrLocked)

// StoreLock is a held store lock: the lock file RocketMQ also uses. It is
// what makes one store have one writer, so it must be held before anything
// reads, creates or deletes a file of the store: the broker's index and
// config files as much as the engine's.
type StoreLock struct {
	u backend.Unlocker
}

// LockStore takes the lock of the store in the root of fs without waiting.
// A store held elsewhere gives an error wrapping ErrStoreLocked (and
// backend.ErrLocked with the OS cause); nothing of the store is touched.
func LockStore(fs backend.FS) (*StoreLock, error) {
	u, err := fs.Lock(lockFile)
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: %w", ErrStoreLocked, err)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: lock store: %w", err)
	}
	return &StoreLock{u: u}, nil
}

// Unlock releases the lock. Calls after the first return nil.
func (l *StoreLock) Unlock() error { return l.u.Unlock() }

// heldByCaller is the Unlocker of a store opened with OpenLocked: the
// caller, who took the lock, releases it after Close.
type heldByCaller struct{}

func (heldByCaller) Unlock() error { return nil }
