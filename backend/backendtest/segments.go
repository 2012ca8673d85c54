package backendtest

import (
	"bytes"
	"math"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// span is an (offset, length) pair probed against a segment of segSize.
type span struct{ off, n int64 }

// inRange lists spans inside a segment of segSize, including empty ones at
// both ends and ranges that straddle page boundaries.
var inRange = []span{
	{0, 0}, {0, 1}, {0, segSize}, {1, pageSize - 1}, {pageSize - 1, 2},
	{pageSize + 1, 10}, {123, segSize - 123}, {segSize - 1, 1}, {segSize, 0},
}

// outOfRange lists spans that reach outside a segment of segSize, including
// ones whose end overflows int64.
var outOfRange = []span{
	{-1, 1}, {-1, 0}, {0, -1}, {0, segSize + 1}, {segSize - 1, 2}, {segSize, 1},
	{segSize + 1, 0}, {math.MaxInt64, 1}, {1, math.MaxInt64}, {math.MinInt64, 1},
}

var viewTests = []test{
	{"ZeroCopy", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		whole := seg.View(0, segSize)
		part := seg.View(pageSize, 100)
		p := pattern(50, 10)
		write(t, seg, p, pageSize+10)
		if !bytes.Equal(whole[pageSize+10:pageSize+60], p) {
			t.Error("write not visible through an earlier View of the whole segment")
		}
		if !bytes.Equal(part[10:60], p) {
			t.Error("write not visible through an earlier View at an offset")
		}
	}},
	{"InRange", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		data := pattern(segSize, 11)
		write(t, seg, data, 0)
		for _, s := range inRange {
			v := seg.View(s.off, s.n)
			if v == nil || !bytes.Equal(v, data[s.off:s.off+s.n]) {
				t.Errorf("View(%d, %d): got %d bytes (nil %t), want %d matching bytes",
					s.off, s.n, len(v), v == nil, s.n)
			}
		}
	}},
	{"OutOfRangeIsNil", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		for _, s := range outOfRange {
			if v := seg.View(s.off, s.n); v != nil {
				t.Errorf("View(%d, %d) = %d bytes, want nil", s.off, s.n, len(v))
			}
		}
	}},
}

var writeAtTests = []test{
	{"InRange", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		want := make([]byte, segSize)
		for i, s := range inRange {
			p := pattern(int(s.n), byte(i))
			write(t, seg, p, s.off)
			copy(want[s.off:], p)
			wantContent(t, seg, want)
		}
	}},
	{"OutOfRangeWritesNothing", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		data := pattern(segSize, 12)
		write(t, seg, data, 0)
		for _, s := range outOfRange {
			if s.n < 0 || s.n > 2*segSize {
				continue // no such buffer; the offsets are covered by other spans
			}
			n, err := seg.WriteAt(make([]byte, s.n), s.off)
			if n != 0 {
				t.Errorf("WriteAt(len %d, %d) wrote %d bytes", s.n, s.off, n)
			}
			wantErr(t, err, backend.ErrRange, "seg", "WriteAt out of range")
			wantContent(t, seg, data)
		}
	}},
}

var syncTests = []test{
	{"ZeroLengthIsNoop", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		for _, off := range []int64{0, 7, pageSize, segSize} {
			if err := seg.Sync(off, 0); err != nil {
				t.Errorf("Sync(%d, 0): %v", off, err)
			}
		}
	}},
	{"UnalignedRangesPersist", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		data := pattern(segSize, 13)
		write(t, seg, data, 0)
		// Together these cover every byte, each range unaligned.
		for _, s := range []span{
			{0, 1}, {1, pageSize - 1}, {pageSize - 1, 2}, {pageSize + 1, pageSize + 5},
			{2*pageSize + 6, segSize - 2*pageSize - 7}, {segSize - 1, 1},
		} {
			if err := seg.Sync(s.off, s.n); err != nil {
				t.Errorf("Sync(%d, %d): %v", s.off, s.n, err)
			}
		}
		closeSeg(t, seg)
		wantContent(t, open(t, fsys, "seg"), data)
	}},
	{"OutOfRange", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		for _, s := range outOfRange {
			if s.n == 0 {
				continue // n == 0 is a no-op wherever it points
			}
			wantErr(t, seg.Sync(s.off, s.n), backend.ErrRange, "", "Sync out of range")
		}
	}},
}

var closeTests = []test{
	{"Idempotent", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		closeSeg(t, seg)
		closeSeg(t, seg)
	}},
	{"UseAfterClose", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		closeSeg(t, seg)
		n, err := seg.WriteAt([]byte{1}, 0)
		if n != 0 {
			t.Errorf("WriteAt after Close wrote %d bytes", n)
		}
		wantErr(t, err, backend.ErrClosed, "", "WriteAt after Close")
		wantErr(t, seg.Sync(0, 1), backend.ErrClosed, "", "Sync after Close")
		if v := seg.View(0, 1); v != nil {
			t.Errorf("View after Close = %v, want nil", v)
		}
	}},
}
