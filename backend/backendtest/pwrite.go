package backendtest

import (
	"bytes"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// pwriter returns seg's optional Pwriter, skipping the test (with a reason)
// for backends that do not have one.
func pwriter(t *testing.T, seg backend.Segment) backend.Pwriter {
	t.Helper()
	pw, ok := seg.(backend.Pwriter)
	if !ok {
		t.Skipf("%T does not implement the optional backend.Pwriter", seg)
	}
	return pw
}

// split cuts p into three pieces (the engine passes a record's head, body
// and tail), the middle one empty when p is short.
func split(p []byte) [][]byte {
	a, b := len(p)/3, 2*len(p)/3
	return [][]byte{p[:a], p[a:b], p[b:]}
}

var pwriteTests = []test{
	{"InRangeVisibleToViews", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		pw := pwriter(t, seg)
		whole := seg.View(0, segSize)
		want := make([]byte, segSize)
		for i, s := range inRange {
			p := pattern(int(s.n), byte(40+i))
			n, err := pw.Pwrite(split(p), s.off)
			if err != nil || n != len(p) {
				t.Fatalf("Pwrite(%d bytes, %d) = %d, %v", len(p), s.off, n, err)
			}
			copy(want[s.off:], p)
			wantContent(t, seg, want)
			if !bytes.Equal(whole, want) {
				t.Fatalf("Pwrite at %d not visible through an earlier View (first difference at %d)", s.off, firstDiff(whole, want))
			}
		}
	}},
	{"MixedWithWriteAt", func(t *testing.T, fsys backend.FS) {
		// Overlapping writes by both paths land in order (mmap: pwrite
		// and the mapping share the page cache).
		seg := create(t, fsys, "seg", segSize)
		pw := pwriter(t, seg)
		want := pattern(segSize, 50)
		write(t, seg, want, 0)
		p := pattern(pageSize+100, 51)
		if _, err := pw.Pwrite(split(p), pageSize-50); err != nil {
			t.Fatal(err)
		}
		copy(want[pageSize-50:], p)
		q := pattern(80, 52)
		write(t, seg, q, pageSize)
		copy(want[pageSize:], q)
		wantContent(t, seg, want)
	}},
	{"SyncedPersists", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		pw := pwriter(t, seg)
		data := pattern(segSize, 53)
		if _, err := pw.Pwrite(split(data), 0); err != nil {
			t.Fatal(err)
		}
		syncAll(t, seg)
		closeSeg(t, seg)
		wantContent(t, open(t, fsys, "seg"), data)
	}},
	{"OutOfRangeWritesNothing", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		pw := pwriter(t, seg)
		data := pattern(segSize, 54)
		write(t, seg, data, 0)
		for _, s := range outOfRange {
			if s.n < 0 || s.n > 2*segSize {
				continue // no such buffer; the offsets are covered by other spans
			}
			n, err := pw.Pwrite(split(make([]byte, s.n)), s.off)
			if n != 0 {
				t.Errorf("Pwrite(len %d, %d) wrote %d bytes", s.n, s.off, n)
			}
			wantErr(t, err, backend.ErrRange, "seg", "Pwrite out of range")
			wantContent(t, seg, data)
		}
	}},
	{"UseAfterClose", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		pw := pwriter(t, seg)
		closeSeg(t, seg)
		n, err := pw.Pwrite([][]byte{{1}}, 0)
		if n != 0 {
			t.Errorf("Pwrite after Close wrote %d bytes", n)
		}
		wantErr(t, err, backend.ErrClosed, "", "Pwrite after Close")
	}},
}
