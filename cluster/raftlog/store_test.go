package raftlog

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// TestLogStoreContract runs hashicorp/raft's LogStore contract, as Raft
// relies on it, as table cases: each applies its steps, compares the log
// with the expected entries, then again after a reopen.
func TestLogStoreContract(t *testing.T) {
	r1 := recordsLog(1, 1, 0, "a", "bb")
	r2 := recordsLog(2, 1, 8+1+8+2, "ccc")
	s3 := sideLog(3, 1, `{"state":1}`)
	end3 := 8 + 1 + 8 + 2 + 8 + 3
	r4 := recordsLog(4, 2, int64(end3), "dddd")
	ext := &raft.Log{Index: 5, Term: 2, Type: raft.LogCommand, Data: EncodeRecords(int64(end3)+12, testRecord([]byte("e"))),
		Extensions: []byte("ext")}
	conf := &raft.Log{Index: 6, Term: 2, Type: raft.LogConfiguration, Data: []byte("peers")}
	r4b := recordsLog(4, 3, int64(end3), "other", "x")

	type step struct {
		store       []*raft.Log
		delMin, del uint64 // DeleteRange(delMin, del) when del > 0
		wantErr     bool
	}
	cases := []struct {
		name  string
		steps []step
		want  []*raft.Log
		// recEnd is the records' end afterwards.
		recEnd int64
	}{
		{name: "empty", want: nil, recEnd: 0},
		{name: "store one by one", steps: []step{{store: []*raft.Log{r1}}, {store: []*raft.Log{r2}}, {store: []*raft.Log{s3}}},
			want: []*raft.Log{r1, r2, s3}, recEnd: int64(end3)},
		{name: "store a batch with extensions and a configuration", steps: []step{{store: []*raft.Log{r1, r2, s3, r4, ext, conf}}},
			want: []*raft.Log{r1, r2, s3, r4, ext, conf}, recEnd: int64(end3) + 12},
		{name: "a gap is refused", steps: []step{{store: []*raft.Log{r1}}, {store: []*raft.Log{s3}, wantErr: true}},
			want: []*raft.Log{r1}, recEnd: 19},
		{name: "records not at the records' end are refused", steps: []step{{store: []*raft.Log{r1}}, {store: []*raft.Log{recordsLog(2, 1, 5, "x")}, wantErr: true}},
			want: []*raft.Log{r1}, recEnd: 19},
		{name: "delete the head", steps: []step{{store: []*raft.Log{r1, r2, s3, r4}}, {delMin: 1, del: 2}},
			want: []*raft.Log{s3, r4}, recEnd: int64(end3) + 12},
		{name: "delete the tail truncates its records", steps: []step{{store: []*raft.Log{r1, r2, s3, r4}}, {delMin: 2, del: 4}},
			want: []*raft.Log{r1}, recEnd: 19},
		{name: "overwrite a suffix in a new term", steps: []step{{store: []*raft.Log{r1, r2, s3, r4, ext}}, {delMin: 4, del: 5}, {store: []*raft.Log{r4b}}},
			want: []*raft.Log{r1, r2, s3, r4b}, recEnd: int64(end3) + 13 + 9},
		{name: "delete everything then restart at a snapshot's index", steps: []step{{store: []*raft.Log{r1, r2}}, {delMin: 1, del: 2},
			{store: []*raft.Log{sideLog(100, 4, "after the snapshot")}}},
			want: []*raft.Log{sideLog(100, 4, "after the snapshot")}, recEnd: int64(end3)},
		{name: "delete everything then go on", steps: []step{{store: []*raft.Log{r1, r2}}, {delMin: 1, del: 2}, {store: []*raft.Log{s3}}},
			want: []*raft.Log{s3}, recEnd: int64(end3)},
		{name: "a delete in the middle is refused", steps: []step{{store: []*raft.Log{r1, r2, s3}}, {delMin: 2, del: 2, wantErr: true}},
			want: []*raft.Log{r1, r2, s3}, recEnd: int64(end3)},
		{name: "deletes outside the log do nothing", steps: []step{{store: []*raft.Log{r1, r2}}, {delMin: 5, del: 9}},
			want: []*raft.Log{r1, r2}, recEnd: int64(end3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := openHarness(memfs.New(afero.NewMemMapFs()), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer h.close()
			for i, st := range c.steps {
				var err error
				if st.del > 0 {
					err = h.s.DeleteRange(st.delMin, st.del)
				} else {
					err = h.s.StoreLogs(st.store)
				}
				if (err != nil) != st.wantErr {
					t.Fatalf("step %d: error %v, want an error: %v", i, err, st.wantErr)
				}
				if err != nil {
					// A refused write leaves the store refusing writes
					// only for a failed write, not a refused one.
					h.reopen(t)
				}
			}
			for _, when := range []string{"open", "reopened"} {
				if err := checkLog(h.s, c.want); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if got := h.recs.End(); got != c.recEnd {
					t.Fatalf("%s: records end at %d, want %d", when, got, c.recEnd)
				}
				h.reopen(t)
			}
		})
	}
}

// TestGetLogOfGoneRecords: an entry whose records the CommitLog no longer
// keeps is not found, so that Raft sends a snapshot instead.
func TestGetLogOfGoneRecords(t *testing.T) {
	h, err := openHarness(memfs.New(afero.NewMemMapFs()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if err := h.s.StoreLogs([]*raft.Log{recordsLog(1, 1, 0, "a"), sideLog(2, 1, "s")}); err != nil {
		t.Fatal(err)
	}
	h.recs.gone = 1
	var l raft.Log
	if err := h.s.GetLog(1, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog of gone records: %v, want raft.ErrLogNotFound", err)
	}
	if err := h.s.GetLog(2, &l); err != nil {
		t.Fatalf("a side entry needs no records: %v", err)
	}
}

// TestNoRecordsStoresSideEntries: without Records, a records entry is kept
// whole in its frame and reads back identical.
func TestNoRecordsStoresSideEntries(t *testing.T) {
	fsys := memfs.New(afero.NewMemMapFs())
	s, err := Open(Options{FS: fsys, Dir: testDir})
	if err != nil {
		t.Fatal(err)
	}
	want := []*raft.Log{recordsLog(1, 1, 0, "a"), recordsLog(2, 1, 99, "b")}
	if err := s.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	if err := checkLog(s, want); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(want); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLogs after Close: %v, want ErrClosed", err)
	}
}

// TestCompactionRemovesSegments: with small segments, a head delete
// removes the segments wholly before the new first index and keeps the
// rest readable across a reopen.
func TestCompactionRemovesSegments(t *testing.T) {
	fsys := memfs.New(afero.NewMemMapFs())
	h, err := openHarness(fsys, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	var all []*raft.Log
	var off int64
	for i := uint64(1); i <= 60; i++ {
		l := recordsLog(i, 1, off, "payload")
		if i%3 == 0 {
			l = sideLog(i, 1, "a side entry of some length")
		} else {
			off += recordsSize(l)
		}
		all = append(all, l)
		if err := h.s.StoreLogs([]*raft.Log{l}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := fsys.List(testDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.s.DeleteRange(1, 50); err != nil {
		t.Fatal(err)
	}
	after, err := fsys.List(testDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 4 || len(after) > 2 {
		t.Fatalf("segments %d before the compaction, %d after: want several, then at most 2", len(before), len(after))
	}
	for range 2 {
		if err := checkLog(h.s, all[50:]); err != nil {
			t.Fatal(err)
		}
		h.reopen(t)
	}
}

// TestStats: an append of records and side entries counts one append,
// its entries, the records bytes and the frames (a new log's head frame
// too), and two syncs (the records and the frames, at once); an append
// of side entries alone syncs once.
func TestStats(t *testing.T) {
	h, err := openHarness(memfs.New(nil), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	r1, s2 := recordsLog(1, 1, 0, "a", "bb"), sideLog(2, 1, "side")
	if err := h.s.StoreLogs([]*raft.Log{r1, s2}); err != nil {
		t.Fatal(err)
	}
	st := h.s.Stats()
	// The first append of a new log also writes a head frame.
	frames := uint64(headerSize+8) + uint64(2*headerSize+recordBodySize+sideBodyMin+len(s2.Data))
	want := Stats{Appends: 1, Entries: 2, EntryBytes: uint64(len(r1.Data) + len(s2.Data)),
		FrameBytes: frames, RecordBytes: uint64(recordsSize(r1)), Syncs: 2}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if err := h.s.StoreLogs([]*raft.Log{sideLog(3, 1, "x")}); err != nil {
		t.Fatal(err)
	}
	if st := h.s.Stats(); st.Appends != 2 || st.Syncs != 3 || st.RecordBytes != want.RecordBytes {
		t.Fatalf("stats after a side entry %+v: want a second append with one sync and no records", st)
	}
}
