package engine

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

// prefaultLog wraps a segment and records its PrefaultWrite calls.
type prefaultLog struct {
	backend.Segment
	calls [][2]int64
}

func (p *prefaultLog) PrefaultWrite(off, n int64) error {
	p.calls = append(p.calls, [2]int64{off, n})
	return nil
}

// TestWriteAheadInline checks the ConsumeQueues' inline write-ahead: a file
// of a queue without read-around populates the pages ahead of its appends
// in batches that grow with what the file has taken, up to writeAheadMax,
// one system call per batch, never past the file's end; a file of any
// other queue populates nothing inline.
func TestWriteAheadInline(t *testing.T) {
	fs := memfs.New(afero.NewMemMapFs())
	const size = 256 << 10
	seg, err := fs.Create("cq", size)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	rec := &prefaultLog{Segment: seg}
	q := &mappedFileQueue{noReadAround: true}
	mf := q.newFile(rec, "cq", 0)
	unit := make([]byte, CQUnitSize)
	pos := int64(0)
	for pos+CQUnitSize <= size {
		if pos, err = mf.appendAt(pos, unit); err != nil {
			t.Fatal(err)
		}
	}
	want := [][2]int64{{0, 4096}, {4096, 4096}, {8192, 8192}, {16384, 16384}, {32768, 32768}}
	for from := int64(65536); from < size; from += writeAheadMax {
		want = append(want, [2]int64{from, writeAheadMax})
	}
	if len(rec.calls) != len(want) {
		t.Fatalf("prefault calls %v, want %v", rec.calls, want)
	}
	for i := range want {
		if rec.calls[i] != want[i] {
			t.Fatalf("prefault call %d: %v, want %v (all: %v)", i, rec.calls[i], want[i], rec.calls)
		}
	}
	// The CommitLog's files (read-around kept, populated by the
	// allocator in the background) take no inline write-ahead.
	other := &prefaultLog{Segment: seg}
	mf = (&mappedFileQueue{}).newFile(other, "cl", 0)
	if _, err := mf.appendAt(0, unit); err != nil {
		t.Fatal(err)
	}
	if len(other.calls) != 0 {
		t.Fatalf("inline prefault on a file with read-around: %v", other.calls)
	}
}
