package mmap

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.Pwriter = (*segment)(nil)

// Pwrite writes the pieces from off with pwritev(2), through the page cache
// rather than through the mapping: the mapping's page-table entries stay
// read-only, so the msync that follows need not write-protect them (no
// TLB shootdown) and the next write takes no fault. View sees the bytes as
// soon as Pwrite returns: the mapping and the file share the page cache.
func (s *segment) Pwrite(pieces [][]byte, off int64) (int, error) {
	if s.closed.Load() {
		return 0, s.errClosed("write")
	}
	if s.readOnly {
		return 0, fmt.Errorf("mmap: write %s: %w", s.path, backend.ErrReadOnly)
	}
	total := 0
	for _, p := range pieces {
		total += len(p)
	}
	if !s.inRange(off, int64(total)) {
		return 0, fmt.Errorf("mmap: write %s at %d, %d bytes (size %d): %w",
			s.path, off, total, s.size, backend.ErrRange)
	}
	if total == 0 {
		return 0, nil
	}
	n, err := unix.Pwritev(s.fd, pieces, off)
	for err == unix.EINTR {
		n, err = unix.Pwritev(s.fd, pieces, off)
	}
	if err != nil {
		return 0, fmt.Errorf("mmap: pwrite %s at %d, %d bytes: %w", s.path, off, total, err)
	}
	if n == total {
		return n, nil
	}
	return s.pwriteRest(pieces, off, n)
}

// pwriteRest finishes a short pwritev that wrote done bytes, piece by
// piece (the kernel may stop a write early, for instance on a signal).
func (s *segment) pwriteRest(pieces [][]byte, off int64, done int) (int, error) {
	skip := done
	for _, p := range pieces {
		if skip >= len(p) {
			skip -= len(p)
			continue
		}
		p, skip = p[skip:], 0
		for len(p) > 0 {
			n, err := unix.Pwrite(s.fd, p, off+int64(done))
			if err == unix.EINTR {
				continue
			}
			if err == nil && n == 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				return done, fmt.Errorf("mmap: pwrite %s at %d, %d bytes: %w", s.path, off+int64(done), len(p), err)
			}
			p, done = p[n:], done+n
		}
	}
	return done, nil
}
