package backendtest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// pageSize is the common page size. Sizes and offsets in the suite straddle
// it on purpose, because page-granular backends round ranges to it.
const pageSize = 4096

// segSize is unaligned and spans several pages so that the last page of a
// segment is partial.
const segSize = 3*pageSize + 123

// create creates a segment and closes it when the test ends. Close is
// idempotent by contract, so tests may also close it themselves.
func create(t *testing.T, fsys backend.FS, name string, size int64) backend.Segment {
	t.Helper()
	seg, err := fsys.Create(name, size)
	if err != nil {
		t.Fatalf("Create(%q, %d): %v", name, size, err)
	}
	t.Cleanup(func() { _ = seg.Close() })
	return seg
}

// open opens a segment and closes it when the test ends.
func open(t *testing.T, fsys backend.FS, name string) backend.Segment {
	t.Helper()
	seg, err := fsys.Open(name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = seg.Close() })
	return seg
}

// createFile creates a file holding data, synced and closed, so that every
// backend must keep it.
func createFile(t *testing.T, fsys backend.FS, name string, data []byte) {
	t.Helper()
	seg := create(t, fsys, name, int64(len(data)))
	write(t, seg, data, 0)
	syncAll(t, seg)
	closeSeg(t, seg)
}

func write(t *testing.T, seg backend.Segment, p []byte, off int64) {
	t.Helper()
	n, err := seg.WriteAt(p, off)
	if err != nil || n != len(p) {
		t.Fatalf("WriteAt(len %d, %d) = %d, %v; want %d, nil", len(p), off, n, err, len(p))
	}
}

func syncAll(t *testing.T, seg backend.Segment) {
	t.Helper()
	if err := seg.Sync(0, seg.Size()); err != nil {
		t.Fatalf("Sync(0, %d): %v", seg.Size(), err)
	}
}

func closeSeg(t *testing.T, seg backend.Segment) {
	t.Helper()
	if err := seg.Close(); err != nil {
		t.Fatalf("Close(%q): %v", seg.Name(), err)
	}
}

func mkdirAll(t *testing.T, fsys backend.FS, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := fsys.MkdirAll(d); err != nil {
			t.Fatalf("MkdirAll(%q): %v", d, err)
		}
	}
}

// pattern returns n bytes that differ from zero and from other seeds, so
// that a misplaced or missing write is visible.
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) ^ seed | 1
	}
	return p
}

// wantContent fails unless the segment holds want from offset 0.
func wantContent(t *testing.T, seg backend.Segment, want []byte) {
	t.Helper()
	if seg.Size() != int64(len(want)) {
		t.Fatalf("%q: Size() = %d, want %d", seg.Name(), seg.Size(), len(want))
	}
	got := seg.View(0, int64(len(want)))
	if !bytes.Equal(got, want) {
		t.Fatalf("%q: content differs at byte %d", seg.Name(), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// wantErr fails unless err wraps target and, as the contract asks of every
// error, names the file it is about.
func wantErr(t *testing.T, err, target error, name, call string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want one wrapping %q", call, err, target)
	}
	if name != "" && !strings.Contains(err.Error(), name) {
		t.Errorf("%s: error %q does not name %q", call, err, name)
	}
}

func wantNames(t *testing.T, call string, got []string, err error, want ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s = %q, want %q", call, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %q, want %q", call, got, want)
		}
	}
}

func wantSize(t *testing.T, fsys backend.FS, name string, want int64) {
	t.Helper()
	got, err := fsys.Stat(name)
	if err != nil || got != want {
		t.Fatalf("Stat(%q) = %d, %v; want %d, nil", name, got, err, want)
	}
}

func wantMissing(t *testing.T, fsys backend.FS, name string) {
	t.Helper()
	_, err := fsys.Stat(name)
	wantErr(t, err, backend.ErrNotExist, name, "Stat("+name+")")
}
