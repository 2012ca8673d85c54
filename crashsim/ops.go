package crashsim

import (
	"errors"
	"fmt"
	"io"
	"syscall"
)

// OpKind names an FS or Segment operation, as an Injector sees it.
type OpKind int

// Operation kinds.
const (
	OpCreate OpKind = iota
	OpOpen
	OpStat
	OpRemove
	OpRename
	OpList
	OpMkdir
	OpRemoveAll
	OpSyncDir
	OpLock
	OpWrite
	OpSync
	numOpKinds
)

var opNames = [...]string{"create", "open", "stat", "remove", "rename", "list", "mkdir",
	"removeall", "syncdir", "lock", "write", "sync"}

// String returns the operation's name.
func (k OpKind) String() string {
	if k >= 0 && k < numOpKinds {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Mutating reports whether an operation changes the file system (a crash
// point worth placing before or after).
func (k OpKind) Mutating() bool {
	switch k {
	case OpCreate, OpRemove, OpRename, OpMkdir, OpRemoveAll, OpSyncDir, OpLock, OpWrite, OpSync:
		return true
	}
	return false
}

// Op is one operation about to run. For OpRename, Path is the old name and
// To the new one; for OpWrite and OpSync, Off and Len give the range.
type Op struct {
	Kind OpKind
	Path string
	To   string
	Off  int64
	Len  int64
}

// String describes the operation for failure reports.
func (o Op) String() string {
	switch o.Kind {
	case OpRename:
		return fmt.Sprintf("rename %s -> %s", o.Path, o.To)
	case OpWrite, OpSync:
		return fmt.Sprintf("%s %s [%d,+%d)", o.Kind, o.Path, o.Off, o.Len)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Path)
}

// Errors an Injector may return; the FS gives each its effect.
var (
	// ErrIO is EIO. On Sync, the dirty pages of the range are marked
	// clean without reaching the disk (Linux's behaviour after a failed
	// writeback): they are lost for good at the next crash.
	ErrIO error = syscall.EIO
	// ErrNoSpace is ENOSPC; the operation does nothing.
	ErrNoSpace error = syscall.ENOSPC
	// ErrShortWrite makes WriteAt copy the first half of its bytes and
	// fail.
	ErrShortWrite = io.ErrShortWrite
	// ErrCrash freezes the FS: the operation fails (a write is applied to
	// the page cache first, as if the power went right after it) and so
	// does every later one, until the test takes Crash.
	ErrCrash = errors.New("crashsim: crashed (power cut)")
	// ErrFrozen is returned by every operation on a frozen FS.
	ErrFrozen = fmt.Errorf("%w: file system is frozen", ErrCrash)
)
