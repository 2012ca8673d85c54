package mmap

import (
	"bytes"
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// PrefaultWrite of a range that another goroutine is writing (the
// allocator's window can fall behind a fast writer) loses none of the
// writes: its page touch only reads.
func TestPrefaultWriteBesideWriter(t *testing.T) {
	fs, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	seg, err := fs.Create("seg", size)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	p := seg.(*segment)
	rec := bytes.Repeat([]byte{0xa5}, 400)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for off := int64(0); off+int64(len(rec)) <= size; off += int64(len(rec)) {
			if _, err := seg.WriteAt(rec, off); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 8; i++ {
		if err := p.PrefaultWrite(0, size); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	n := size / len(rec) * len(rec)
	if !bytes.Equal(seg.View(0, int64(n)), bytes.Repeat([]byte{0xa5}, n)) {
		t.Fatal("a write was lost beside PrefaultWrite")
	}
}

// BenchmarkWriteAfterPrefault is the writer's side of the write-ahead
// window: 400-byte copies (the official client's records) into pages that
// PrefaultWrite populated outside the timer, with and without its page
// touch. Under a hypervisor with shadow page tables the untouched pages
// cost the first copy into each a trap the guest does not count as a
// fault.
func BenchmarkWriteAfterPrefault(b *testing.B) {
	for _, touch := range []bool{true, false} {
		name := "touch"
		if !touch {
			name = "notouch"
		}
		b.Run(name, func(b *testing.B) {
			defer func(v bool) { noTouch = v }(noTouch)
			noTouch = !touch
			const rec, size = 400, 16 << 20
			fsys := newFS(b)
			buf := bytes.Repeat([]byte{1}, rec)
			var seg backend.Segment
			off, files := int64(size), 0
			b.Cleanup(func() {
				if seg != nil {
					_ = seg.Close()
				}
			})
			b.SetBytes(rec)
			for b.Loop() {
				if off+rec > size {
					b.StopTimer()
					seg = nextSegment(b, fsys, seg, files, size)
					files++
					if err := seg.(*segment).PrefaultWrite(0, size); err != nil {
						b.Fatal(err)
					}
					off = 0
					b.StartTimer()
				}
				if _, err := seg.WriteAt(buf, off); err != nil {
					b.Fatal(err)
				}
				off += rec
			}
		})
	}
}
