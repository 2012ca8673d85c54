package mmap

import "testing"

// PrefaultRead leaves the content as it was, clips ranges to the segment
// and is a no-op after Close; a Pwrite into pages it mapped is visible
// through those mappings at once (one page cache).
func TestPrefaultReadThenPwrite(t *testing.T) {
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
		if err := p.PrefaultRead(r[0], r[1]); err != nil {
			t.Fatalf("PrefaultRead(%d, %d): %v", r[0], r[1], err)
		}
	}
	if got := string(seg.View(4096+10, 5)); got != "hello" {
		t.Fatalf("content after prefault %q", got)
	}
	if b := seg.View(0, 4096); !allZeroBytes(b) {
		t.Fatal("prefault changed zero pages")
	}
	view := seg.View(8192, 4096) // mapped (read-only) by the prefault
	if _, err := p.Pwrite([][]byte{[]byte("wor"), nil, []byte("ld")}, 8192+100); err != nil {
		t.Fatal(err)
	}
	if got := string(view[100:105]); got != "world" {
		t.Fatalf("pwrite into a prefaulted page reads %q through the mapping", got)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.PrefaultRead(0, 4096); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}
