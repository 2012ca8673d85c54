package mmap

import (
	"errors"
	"os"
)

// preallocate makes the new, empty file f exactly size bytes long with its
// blocks allocated, so that writes through the mapping can never hit a hole
// on a full disk (which the kernel reports as SIGBUS, not as an error).
func preallocate(f *os.File, size int64) error {
	return preallocateWith(f, size, fallocate)
}

// preallocateWith is preallocate with the allocation call passed in, so that
// tests can take the fallback path on file systems that do support it.
func preallocateWith(f *os.File, size int64, alloc func(fd int, size int64) error) error {
	if size == 0 {
		return nil // fallocate rejects a zero length, and the file is already empty
	}
	err := alloc(int(f.Fd()), size)
	if errors.Is(err, errors.ErrUnsupported) {
		// The file system cannot allocate ahead (ENOTSUP, EOPNOTSUPP,
		// ENOSYS all match ErrUnsupported). A sparse file still works;
		// it just loses the full-disk protection.
		return f.Truncate(size)
	}
	return err
}
