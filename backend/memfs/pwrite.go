package memfs

import (
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.Pwriter = (*segment)(nil)

// Pwrite copies the pieces into the page cache one after another from off,
// like WriteAt of their concatenation: there is no mapping here, so a
// pwrite and a mapped write are the same copy, lost alike on a power cut
// before Sync. It exists so that the engine's pwrite path runs on memfs too.
func (s *segment) Pwrite(pieces [][]byte, off int64) (int, error) {
	total := int64(0)
	for _, p := range pieces {
		total += int64(len(p))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return 0, pathErr("write", s.name, backend.ErrClosed)
	}
	if off < 0 || off > s.size-total {
		return 0, pathErr("write", s.name,
			fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, total, off, s.size))
	}
	if total == 0 {
		return 0, nil
	}
	pos := off
	for _, p := range pieces {
		pos += int64(copy(s.buf[pos:], p))
	}
	first, end := pageSpan(off, total)
	for i := first; i < end; i++ {
		s.mu.dirty.set(i)
	}
	return int(total), nil
}
