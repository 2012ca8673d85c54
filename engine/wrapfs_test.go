package engine_test

import (
	"strings"

	"github.com/rocketstore/rocketstore/backend"
)

// wrapFS is an FS whose segments, created or opened, pass through wrap: the
// tests' way to watch or hold what the store does to its files.
type wrapFS struct {
	backend.FS
	wrap func(name string, seg backend.Segment) backend.Segment
}

func (f wrapFS) Create(name string, size int64) (backend.Segment, error) {
	seg, err := f.FS.Create(name, size)
	if err != nil {
		return nil, err
	}
	return f.wrap(name, seg), nil
}

func (f wrapFS) Open(name string) (backend.Segment, error) {
	seg, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return f.wrap(name, seg), nil
}

// commitLogOnly applies wrap to the CommitLog's segments and leaves the
// others as they are.
func commitLogOnly(wrap func(name string, seg backend.Segment) backend.Segment) func(string, backend.Segment) backend.Segment {
	return func(name string, seg backend.Segment) backend.Segment {
		if !strings.HasPrefix(name, "commitlog/") {
			return seg
		}
		return wrap(name, seg)
	}
}
