package mmap

import (
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// BenchmarkMemcpyMappedFile is the baseline for the engine's write path: a
// copy of each 4 KiB chunk into a preallocated 64 MiB mapped segment, with
// the page faults of first touch included. A new segment replaces each full
// one (outside the timer), so the faults recur rather than being paid once.
func BenchmarkMemcpyMappedFile(b *testing.B) {
	const chunk, size = 4 << 10, 64 << 20
	fsys := newFS(b)
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	var seg backend.Segment
	var off int64
	files := 0
	b.Cleanup(func() {
		if seg != nil {
			_ = seg.Close()
		}
	})
	b.SetBytes(chunk)
	for b.Loop() {
		if seg == nil || off+chunk > size {
			b.StopTimer()
			seg = nextSegment(b, fsys, seg, files, size)
			files++
			off = 0
			b.StartTimer()
		}
		if _, err := seg.WriteAt(buf, off); err != nil {
			b.Fatal(err)
		}
		off += chunk
	}
}

// nextSegment closes and removes old, if any, so that disk use stays at one
// segment, and creates segment number n.
func nextSegment(b *testing.B, fsys *FS, old backend.Segment, n int, size int64) backend.Segment {
	if old != nil {
		if err := old.Close(); err != nil {
			b.Fatal(err)
		}
		if err := fsys.Remove(old.Name()); err != nil {
			b.Fatal(err)
		}
	}
	seg, err := fsys.Create(fmt.Sprintf("%020d", n), size)
	if err != nil {
		b.Fatal(err)
	}
	return seg
}
