package memfs

import (
	"cmp"
	"math/bits"
	"slices"
)

// PageSize is the granularity of dirty tracking and of Sync, the usual page
// size of Linux's page cache.
const PageSize = 4096

// DirtyPage is one page of the page cache that differs from, or was written
// since, the durable image: what a power cut would lose.
type DirtyPage struct {
	// Name is the file's current canonical name: slash-separated, relative
	// to the root, as cleaned by the FS (it follows renames).
	Name string
	// Off is the page's offset in the file, a multiple of PageSize.
	Off int64
	// Data is a copy of the volatile page: PageSize bytes, or fewer for
	// the last page of a file whose size is not a multiple of PageSize.
	Data []byte
}

// DirtyPages returns every unsynced page of the files of f, open or closed,
// sorted by Name and Off. Pages of removed files are not included. It waits
// for Syncs in progress, so that each page is either reported or durable.
//
// A crash simulator can build the after-crash image from f.Afero() plus any
// subset of these pages (or sectors of them).
func (f *FS) DirtyPages() []DirtyPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []DirtyPage
	for p, pages := range f.mu.closed {
		out = appendPages(out, p, pages)
	}
	for s := range f.mu.open {
		if s.path == "" {
			continue
		}
		s.syncMu.Lock()
		s.mu.Lock()
		pages := s.dirtyPagesLocked()
		s.mu.Unlock()
		s.syncMu.Unlock()
		out = appendPages(out, s.path, pages)
	}
	slices.SortFunc(out, func(a, b DirtyPage) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Off, b.Off))
	})
	return out
}

func appendPages(out []DirtyPage, p string, pages map[int64][]byte) []DirtyPage {
	for i, data := range pages {
		out = append(out, DirtyPage{Name: p, Off: i * PageSize, Data: slices.Clone(data)})
	}
	return out
}

// dirtyPagesLocked copies the dirty pages of s by page index. Called with
// s.mu held and s open.
func (s *segment) dirtyPagesLocked() map[int64][]byte {
	pages := make(map[int64][]byte)
	n := pageCount(s.size)
	for i := s.mu.dirty.next(0, n); i < n; i = s.mu.dirty.next(i+1, n) {
		pages[i] = slices.Clone(s.buf[i*PageSize : min((i+1)*PageSize, s.size)])
	}
	return pages
}

// adopt loads the pages a closed segment of the same file left in the page
// cache and marks them dirty again. Called before s is shared.
func (s *segment) adopt(pages map[int64][]byte) {
	for i, data := range pages {
		if off := i * PageSize; off < s.size {
			copy(s.buf[off:], data)
			s.mu.dirty.set(i)
		}
	}
}

// keep files the dirty pages of a closing segment under p, over any that an
// earlier segment of the same file left. Called with f.mu held.
func (f *FS) keep(p string, pages map[int64][]byte) {
	old := f.mu.closed[p]
	if old == nil {
		f.mu.closed[p] = pages
		return
	}
	for i, data := range pages {
		old[i] = data
	}
}

// forget drops the page cache of p and of everything below it, and marks
// their open segments unlinked. Called with f.mu held.
func (f *FS) forget(p string) {
	for k := range f.mu.closed {
		if within(p, k) {
			delete(f.mu.closed, k)
		}
	}
	for s := range f.mu.open {
		if s.path != "" && within(p, s.path) {
			s.path = ""
		}
	}
}

// move renames the page cache of oldp, and of everything below it, to newp.
// Called with f.mu held.
func (f *FS) move(oldp, newp string) {
	moved := make(map[string]map[int64][]byte)
	for k, pages := range f.mu.closed {
		if within(oldp, k) {
			moved[newp+k[len(oldp):]] = pages
			delete(f.mu.closed, k)
		}
	}
	for k, pages := range moved {
		f.mu.closed[k] = pages
	}
	for s := range f.mu.open {
		if s.path != "" && within(oldp, s.path) {
			s.path = newp + s.path[len(oldp):]
		}
	}
}

// pageCount is the number of pages of a file of size bytes.
func pageCount(size int64) int64 { return (size + PageSize - 1) / PageSize }

// pageSpan returns the pages [first, end) that touch [off, off+n), n > 0.
func pageSpan(off, n int64) (first, end int64) {
	return off / PageSize, (off+n-1)/PageSize + 1
}

// bitmap holds one bit per page.
type bitmap []uint64

func newBitmap(n int64) bitmap { return make(bitmap, (n+63)/64) }

func (b bitmap) set(i int64)      { b[i/64] |= 1 << (i % 64) }
func (b bitmap) clear(i int64)    { b[i/64] &^= 1 << (i % 64) }
func (b bitmap) get(i int64) bool { return b[i/64]&(1<<(i%64)) != 0 }

// next returns the first set bit in [i, end), or end if there is none. It
// skips clear words whole, since most of a large segment is clean.
func (b bitmap) next(i, end int64) int64 {
	for i < end {
		w := b[i/64] >> (i % 64)
		if w != 0 {
			return min(i+int64(bits.TrailingZeros64(w)), end)
		}
		i = (i/64 + 1) * 64
	}
	return end
}
