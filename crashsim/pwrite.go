package crashsim

import (
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.Pwriter = (*segment)(nil)

// Pwrite is WriteAt of the pieces' concatenation, as one OpWrite: a
// pwrite(2) lands in the page cache exactly as a copy into a mapping does,
// so it is dirty until a Sync, lost on a power cut before it, and torn or
// cut short by the injector alike (ErrShortWrite keeps the first half).
func (s *segment) Pwrite(pieces [][]byte, off int64) (int, error) {
	total := int64(0)
	for _, p := range pieces {
		total += int64(len(p))
	}
	if s.closed.Load() {
		return 0, s.err("write", backend.ErrClosed)
	}
	if off < 0 || off > s.ino.size()-total {
		return 0, s.err("write", fmt.Errorf("%w: %d bytes at %d, size %d", backend.ErrRange, total, off, s.ino.size()))
	}
	err := s.fs.enter(Op{Kind: OpWrite, Path: s.path, Off: off, Len: total})
	switch {
	case err == nil:
		s.writePieces(pieces, off, total)
		return int(total), nil
	case errorsIs(err, ErrCrash):
		s.writePieces(pieces, off, total) // in the cache, then the power went
	case errorsIs(err, ErrShortWrite):
		h := total / 2
		s.writePieces(pieces, off, h)
		return int(h), s.err("write", err)
	}
	return 0, s.err("write", err)
}

// writePieces copies the first n bytes of the pieces' concatenation to off.
func (s *segment) writePieces(pieces [][]byte, off, n int64) {
	for _, p := range pieces {
		if n <= 0 {
			return
		}
		p = p[:min(int64(len(p)), n)]
		if len(p) > 0 {
			s.ino.write(p, off)
		}
		off, n = off+int64(len(p)), n-int64(len(p))
	}
}
