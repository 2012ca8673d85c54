package mmap

import "testing"

// PrefaultWrite leaves the content as it was, clips ranges to the segment
// and is a no-op after Close.
func TestPrefaultWriteKeepsContent(t *testing.T) {
	p := prefaultedSegment(t, (*segment).PrefaultWrite)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.PrefaultWrite(0, 4096); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

// prefaultedSegment creates a 1 MiB segment holding "hello" at 4096+10,
// prefaults it over whole, partial, clipped and out-of-range spans, and
// checks that the content is unchanged.
func prefaultedSegment(t *testing.T, prefault func(*segment, int64, int64) error) *segment {
	t.Helper()
	fs, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seg, err := fs.Create("seg", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seg.WriteAt([]byte("hello"), 4096+10); err != nil {
		t.Fatal(err)
	}
	p := seg.(*segment)
	for _, r := range [][2]int64{{0, 1 << 20}, {4096 + 3, 100}, {1<<20 - 10, 1 << 20}, {-5, 10}, {2 << 20, 10}} {
		if err := prefault(p, r[0], r[1]); err != nil {
			t.Fatalf("prefault(%d, %d): %v", r[0], r[1], err)
		}
	}
	if got := string(seg.View(4096+10, 5)); got != "hello" {
		t.Fatalf("content after prefault %q", got)
	}
	if b := seg.View(0, 4096); !allZeroBytes(b) {
		t.Fatal("prefault changed zero pages")
	}
	return p
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
