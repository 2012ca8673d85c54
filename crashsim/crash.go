package crashsim

import (
	"fmt"

	"github.com/spf13/afero"
)

// Crash returns what a disk would hold after a power cut now, as a new
// afero.MemMapFs that shares nothing with f. ch makes every choice (see
// Chooser). f itself is left as it was; a test usually abandons it, and
// may call Crash again with other choices.
func (f *FS) Crash(ch Chooser) afero.Fs {
	f.mu.Lock()
	ns := f.mu.disk.clone()
	pending := append([]dirOp(nil), f.mu.pending...)
	freed := f.mu.freed // never modified in place, only replaced
	f.mu.Unlock()
	for _, op := range pending {
		if ch.Choose(2, "keep "+op.String()) == Persisted {
			ns.apply(op)
		}
	}
	ns.prune()
	out := afero.NewMemMapFs()
	for _, d := range sortedKeys(ns.dirs) {
		if d != "." {
			must(out.MkdirAll(d, 0o755))
		}
	}
	for _, p := range sortedKeys(ns.files) {
		fr := freed
		if u := f.opts.ReuseFreedBlocksUnder; u != "" && !within(clean(u), p) {
			fr = nil
		}
		must(afero.WriteFile(out, p, ns.files[p].crashImage(p, ch, fr), 0o644))
	}
	return out
}

// crashImage returns the file's content after a power cut: the durable
// image with each dirty page old, new or torn. An old page that was never
// written back may hold a freed block instead (Options.ReuseFreedBlocks;
// freed is empty without it).
func (ino *inode) crashImage(p string, ch Chooser, freed [][]byte) []byte {
	ino.mu.Lock()
	defer ino.mu.Unlock()
	img := append([]byte(nil), ino.durable...)
	for i, dirty := range ino.dirty {
		if !dirty {
			continue
		}
		lo, hi := ino.pageRange(i)
		switch ch.Choose(3, fmt.Sprintf("page %s@%d", p, lo)) {
		case PageNew:
			copy(img[lo:hi], ino.cache[lo:hi])
		case PageTorn:
			for s := lo; s < hi; s += SectorSize {
				e := min(s+SectorSize, hi)
				if ch.Choose(2, fmt.Sprintf("sector %s@%d", p, s)) == 1 {
					copy(img[s:e], ino.cache[s:e])
				}
			}
		default: // PageOld
			if ino.written[i] || len(freed) == 0 {
				break
			}
			if k := ch.Choose(len(freed)+1, fmt.Sprintf("stale block in %s@%d", p, lo)); k > 0 {
				clear(img[lo:hi])
				copy(img[lo:hi], freed[k-1])
			}
		}
	}
	return img
}

// must panics on an error of the in-memory afero.Fs, which cannot fail
// for the paths Crash writes.
func must(err error) {
	if err != nil {
		panic("crashsim: writing crash image: " + err.Error())
	}
}

// Image returns the files as the process sees them now (page cache
// content, current names), as a new afero.MemMapFs: the state after a
// power cut in which everything survived.
func (f *FS) Image() afero.Fs { return f.Crash(Newest) }

// Files returns a copy of the page cache content of every file, by path.
func (f *FS) Files() map[string][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]byte, len(f.mu.files))
	for p, ino := range f.mu.files {
		ino.mu.Lock()
		out[p] = append([]byte(nil), ino.cache...)
		ino.mu.Unlock()
	}
	return out
}
