package mmap

import "testing"

// PrefaultRead leaves the content as it was, clips ranges to the segment
// and is a no-op after Close; a Pwrite into pages it mapped is visible
// through those mappings at once (one page cache).
func TestPrefaultReadThenPwrite(t *testing.T) {
	p := prefaultedSegment(t, (*segment).PrefaultRead)
	view := p.View(8192, 4096) // mapped (read-only) by the prefault
	if _, err := p.Pwrite([][]byte{[]byte("wor"), nil, []byte("ld")}, 8192+100); err != nil {
		t.Fatal(err)
	}
	if got := string(view[100:105]); got != "world" {
		t.Fatalf("pwrite into a prefaulted page reads %q through the mapping", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.PrefaultRead(0, 4096); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}
