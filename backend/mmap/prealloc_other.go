//go:build !linux

package mmap

import "errors"

// fallocate is unavailable outside Linux; preallocate then falls back to
// ftruncate.
func fallocate(fd int, size int64) error { return errors.ErrUnsupported }
