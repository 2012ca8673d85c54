package raftlog

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/backend"
)

// segExt names the frame segment files: DIR/%020d.seg, numbered from 1
// without gaps.
const segExt = ".seg"

// segment is one frame file.
//
// Invariant: the bytes past end are zero (Open and truncations zero them),
// so that a torn or stale frame never follows the written ones.
type segment struct {
	seq uint64
	f   backend.Segment
	// end is where the next frame goes.
	end int64
	// synced is the end of the frames already synced.
	synced int64
	// lastIndex is the highest entry index framed in it, 0 for none.
	lastIndex uint64
	// full marks a segment closed by a roll frame.
	full bool
}

func segName(dir string, seq uint64) string {
	return path.Join(dir, fmt.Sprintf("%020d%s", seq, segExt))
}

// parseSegName returns the sequence number of a segment file name.
func parseSegName(name string) (uint64, bool) {
	num, ok := strings.CutSuffix(name, segExt)
	if !ok || len(num) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	return seq, err == nil && seq > 0
}

// frameAt decodes the frame at pos, which the index says is whole.
func (g *segment) frameAt(pos int64) (frame, error) {
	b := g.f.View(pos, g.f.Size()-pos)
	fr, _, err := decodeFrame(b)
	if err != nil {
		return frame{}, fmt.Errorf("%s at %d: %w", g.f.Name(), pos, err)
	}
	return fr, nil
}

// write appends b, which fits.
func (g *segment) write(b []byte) error {
	if _, err := g.f.WriteAt(b, g.end); err != nil {
		return err
	}
	g.end += int64(len(b))
	return nil
}

// sync makes the frames written since the last sync durable.
func (g *segment) sync() error {
	if g.end <= g.synced {
		return nil
	}
	if err := g.f.Sync(g.synced, g.end-g.synced); err != nil {
		return err
	}
	g.synced = g.end
	return nil
}

// zeroFrom zeroes [pos, end) durably and makes pos the end.
func (g *segment) zeroFrom(pos int64) error {
	if n := g.end - pos; n > 0 {
		if _, err := g.f.WriteAt(make([]byte, n), pos); err != nil {
			return err
		}
		if err := g.f.Sync(pos, n); err != nil {
			return err
		}
	}
	g.end, g.synced, g.full = pos, pos, false
	return nil
}

// fits reports whether n more bytes fit while leaving room for a roll frame.
func (g *segment) fits(n int) bool {
	return !g.full && g.end+int64(n)+headerSize <= g.f.Size()
}
