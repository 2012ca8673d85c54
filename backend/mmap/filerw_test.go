package mmap

import (
	"errors"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// Pwrite and ReadFile go through the file, and the mapping sees the
// same bytes both ways; ranges outside the segment and closed segments
// are refused.
func TestFileReadWriteShareTheMapping(t *testing.T) {
	fs, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg, err := fs.Create("seg", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	w, r := seg.(backend.Pwriter), seg.(backend.FileReader)
	if _, err := w.Pwrite([][]byte{[]byte("through the file")}, 5000); err != nil {
		t.Fatal(err)
	}
	if got := string(seg.View(5000, 16)); got != "through the file" {
		t.Fatalf("mapping sees %q", got)
	}
	if _, err := seg.WriteAt([]byte("via the map"), 9000); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 11)
	if _, err := r.ReadFile(buf, 9000); err != nil || string(buf) != "via the map" {
		t.Fatalf("ReadFile: %q, %v", buf, err)
	}
	if _, err := w.Pwrite([][]byte{make([]byte, 10)}, 64<<10-5); !errors.Is(err, backend.ErrRange) {
		t.Fatalf("Pwrite past the end: %v", err)
	}
	if _, err := r.ReadFile(make([]byte, 10), -1); !errors.Is(err, backend.ErrRange) {
		t.Fatalf("ReadFile before the start: %v", err)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Pwrite([][]byte{[]byte("x")}, 0); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Pwrite after Close: %v", err)
	}
	if _, err := r.ReadFile(buf, 0); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("ReadFile after Close: %v", err)
	}
}
