package verify

import (
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/rocketstore/rocketstore/backend"
)

// nameDigits is the width of a segment name: the zero-padded offset of the
// file's first byte (RocketMQ's UtilAll.offset2FileName).
const nameDigits = 20

// segFile is one open segment of a file queue.
type segFile struct {
	name string // path relative to the store root
	from int64  // offset of its first byte in the queue's offset space
	seg  backend.Segment
}

// fileQueue is a directory of equal-size, contiguous segments (the
// CommitLog, or one ConsumeQueue). Files that break the layout are reported
// and left out, so that the rest can still be checked.
type fileQueue struct {
	size  int64
	files []segFile
	// firstNamed is the start of the first well-named file, opened or not
	// (-1 if none): units below it point into deleted, expired files.
	firstNamed int64
}

// parseName returns the offset a 20-digit file name stands for.
func parseName(name string) (int64, bool) {
	if len(name) != nameDigits {
		return 0, false
	}
	for _, ch := range name {
		if ch < '0' || ch > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(name, 10, 64)
	return off, err == nil
}

// openFileQueue opens the segments of dir. size is the expected file size
// (0: the size most files have); unit is what it must be a multiple of. A
// missing directory gives an empty queue.
func (c *checker) openFileQueue(dir string, size, unit int64) (*fileQueue, error) {
	names, err := c.fs.List(dir)
	if errors.Is(err, backend.ErrNotExist) {
		return &fileQueue{size: size, firstNamed: -1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify: list %s: %w", dir, err)
	}
	names = c.ignoreForeign(dir, names, func(n string) bool { _, ok := parseName(n); return ok })
	sizes := make([]int64, len(names))
	for i, n := range names {
		if sizes[i], err = c.fs.Stat(path.Join(dir, n)); err != nil {
			return nil, fmt.Errorf("verify: stat %s: %w", path.Join(dir, n), err)
		}
	}
	if size == 0 {
		size = commonSize(sizes)
	}
	q := &fileQueue{size: size, firstNamed: -1}
	for i, n := range names {
		if err := c.addFile(q, dir, n, sizes[i], unit); err != nil {
			q.close()
			return nil, err
		}
	}
	return q, nil
}

// commonSize returns the size most files have (the larger on a tie): one
// truncated file must not make all the others look wrong.
func commonSize(sizes []int64) int64 {
	count := make(map[int64]int)
	best := int64(0)
	for _, s := range sizes {
		count[s]++
		if count[s] > count[best] || (count[s] == count[best] && s > best) {
			best = s
		}
	}
	return best
}

// addFile checks one file's name, size and position and opens it.
func (c *checker) addFile(q *fileQueue, dir, name string, size, unit int64) error {
	p := path.Join(dir, name)
	from, _ := parseName(name) // ignoreForeign kept only segment names
	if q.firstNamed < 0 {
		q.firstNamed = from
	}
	switch {
	case q.size <= 0 || q.size%unit != 0:
		c.violation(KindLayout, p, 0, "file size %d is not a positive multiple of %d", q.size, unit)
		return nil
	case size != q.size:
		c.violation(KindLayout, p, 0, "file size %d, want %d like the other files", size, q.size)
		return nil
	case from%q.size != 0:
		c.violation(KindLayout, p, 0, "start offset %d is not a multiple of the file size %d", from, q.size)
		return nil
	case len(q.files) > 0 && from != q.files[len(q.files)-1].from+q.size:
		prev := q.files[len(q.files)-1]
		c.violation(KindLayout, p, 0, "starts at %d, but the previous file %s ends at %d", from, prev.name, prev.from+q.size)
		return nil
	}
	seg, err := c.fs.Open(p)
	if err != nil {
		return fmt.Errorf("verify: open %s: %w", p, err)
	}
	q.files = append(q.files, segFile{name: p, from: from, seg: seg})
	c.progress.total += size
	return nil
}

// find returns the file holding offset off and its index.
func (q *fileQueue) find(off int64) (segFile, int, bool) {
	if len(q.files) == 0 || off < q.files[0].from {
		return segFile{}, 0, false
	}
	i := (off - q.files[0].from) / q.size
	if i >= int64(len(q.files)) {
		return segFile{}, 0, false
	}
	return q.files[i], int(i), true
}

// minOffset returns the first offset held (0 for an empty queue).
func (q *fileQueue) minOffset() int64 {
	if len(q.files) == 0 {
		return 0
	}
	return q.files[0].from
}

func (q *fileQueue) close() {
	for _, f := range q.files {
		f.seg.Close()
	}
	q.files = nil
}

// firstNonZero returns the index of the first non-zero byte of b, or -1.
func firstNonZero(b []byte) int {
	for i, ch := range b {
		if ch != 0 {
			return i
		}
	}
	return -1
}

// ignoreForeign returns the names the store writes in dir (ours) and adds
// the others to the report's Ignored list: the store skips them too.
func (c *checker) ignoreForeign(dir string, names []string, ours func(string) bool) []string {
	kept := names[:0]
	for _, n := range names {
		if ours(n) {
			kept = append(kept, n)
		} else {
			c.rep.Ignored = append(c.rep.Ignored, path.Join(dir, n))
		}
	}
	return kept
}
