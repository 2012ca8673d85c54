package raftlog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

// committedRecords are fileRecords whose bytes before committed are the
// state machine's: a truncation below it is refused, as the engine's
// store of replicated records refuses it.
type committedRecords struct {
	*fileRecords
	committed int64
}

var errBelowCommitted = errors.New("test records: truncation below the committed records")

func (r *committedRecords) Truncate(end int64) error {
	if end < r.committed {
		return fmt.Errorf("%w: %d < %d", errBelowCommitted, end, r.committed)
	}
	return r.fileRecords.Truncate(end)
}

func (r *committedRecords) Committed() int64 { return r.committed }

// blindRecords hide Committed from the store.
type blindRecords struct{ r *committedRecords }

func (b blindRecords) End() int64                       { return b.r.End() }
func (b blindRecords) Append(p []byte, off int64) error { return b.r.Append(p, off) }
func (b blindRecords) ReadAt(p []byte, off int64) error { return b.r.ReadAt(p, off) }
func (b blindRecords) Sync() error                      { return b.r.Sync() }
func (b blindRecords) Truncate(end int64) error         { return b.r.Truncate(end) }

func openCommitted(t *testing.T, fsys backend.FS, blind bool) (*Store, *committedRecords) {
	t.Helper()
	fr, err := openFileRecords(fsys, testRecordsSize)
	if err != nil {
		t.Fatal(err)
	}
	cr := &committedRecords{fileRecords: fr}
	var recs Records = cr
	if blind {
		recs = blindRecords{cr}
	}
	s, err := Open(Options{FS: fsys, Dir: testDir, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = fr.Close() })
	return s, cr
}

// TestTailDeleteBelowCommittedRefusedFirst: a deletion of the log's tail
// whose records are committed is refused before any frame is touched, so
// the log keeps its entries and takes writes. The broken variant, a
// Records that does not say what is committed, shows what the check
// prevents: the frames are zeroed, the truncation refused after, and the
// store refuses every later write.
func TestTailDeleteBelowCommittedRefusedFirst(t *testing.T) {
	for _, blind := range []bool{false, true} {
		t.Run(fmt.Sprint("blind=", blind), func(t *testing.T) {
			s, cr := openCommitted(t, memfs.New(afero.NewMemMapFs()), blind)
			a := recordsLog(1, 1, 0, "a")
			b := recordsLog(2, 1, recordsSize(a), "b")
			if err := s.StoreLogs([]*raft.Log{a, b}); err != nil {
				t.Fatal(err)
			}
			cr.committed = cr.End()
			err := s.DeleteRange(2, 2)
			next := recordsLog(3, 1, cr.End(), "c")
			werr := s.StoreLogs([]*raft.Log{next})
			if blind {
				if err == nil || werr == nil {
					t.Fatalf("broken variant: delete %v, next write %v: want both refused", err, werr)
				}
				return
			}
			if !errors.Is(err, ErrCommitted) {
				t.Fatalf("delete of a committed tail: %v, want ErrCommitted", err)
			}
			if werr != nil {
				t.Fatalf("the store refuses writes after a refused delete: %v", werr)
			}
			if err := checkLog(s, []*raft.Log{a, b, next}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenKeepsCommittedRecordsPastFrames: records past the frames that
// the Records hold as committed (a snapshot install wrote them) survive
// Open; uncommitted ones past them are cut. A store blind to what is
// committed (the broken variant) cuts them all.
func TestOpenKeepsCommittedRecordsPastFrames(t *testing.T) {
	fsys := memfs.New(afero.NewMemMapFs())
	s, cr := openCommitted(t, fsys, false)
	a := recordsLog(1, 1, 0, "a")
	if err := s.StoreLogs([]*raft.Log{a}); err != nil {
		t.Fatal(err)
	}
	installed := testRecord([]byte("installed"))
	loose := testRecord([]byte("loose"))
	end := cr.End()
	if err := cr.Append(installed, end); err != nil {
		t.Fatal(err)
	}
	if err := cr.Append(loose, end+int64(len(installed))); err != nil {
		t.Fatal(err)
	}
	if err := cr.Sync(); err != nil {
		t.Fatal(err)
	}
	committed := end + int64(len(installed))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cr.fileRecords.Close(); err != nil {
		t.Fatal(err)
	}
	fr, err := openFileRecords(fsys, testRecordsSize)
	if err != nil {
		t.Fatal(err)
	}
	cr2 := &committedRecords{fileRecords: fr, committed: committed}
	s2, err := Open(Options{FS: fsys, Dir: testDir, Records: cr2})
	if err != nil {
		t.Fatal(err)
	}
	if got := cr2.End(); got != committed {
		t.Fatalf("records end at %d after Open, want the committed %d", got, committed)
	}
	// The broken variant: a store blind to what is committed cuts the
	// installed records too.
	if err := errors.Join(s2.Close(), fr.Close()); err != nil {
		t.Fatal(err)
	}
	fr3, err := openFileRecords(fsys, testRecordsSize)
	if err != nil {
		t.Fatal(err)
	}
	defer fr3.Close()
	s3, err := Open(Options{FS: fsys, Dir: testDir, Records: blindRecords{&committedRecords{fileRecords: fr3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if got := fr3.End(); got != end {
		t.Fatalf("broken variant: records end at %d after a blind Open, want them cut to the frames' %d", got, end)
	}
}
