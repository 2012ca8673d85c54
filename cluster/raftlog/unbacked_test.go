package raftlog

import (
	"errors"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// unbackedCase stores two appends of records entries, closes the store,
// lets damage change the records file, and reopens.
func unbackedCase(t *testing.T, damage func(t *testing.T, h *harness, first, second []*raft.Log)) (*harness, []*raft.Log, []*raft.Log, error) {
	t.Helper()
	h, err := openHarness(memfs.New(nil), 4096)
	if err != nil {
		t.Fatal(err)
	}
	first := []*raft.Log{recordsLog(1, 1, 0, "one"), recordsLog(2, 1, 0, "two")}
	first[1] = recordsLog(2, 1, recordsSize(first[0]), "two")
	end := recordsSize(first[0]) + recordsSize(first[1])
	second := []*raft.Log{recordsLog(3, 1, end, "three"), sideLog(4, 1, "side"), recordsLog(5, 1, end+recordsSize(recordsLog(0, 0, 0, "three")), "five")}
	for _, ls := range [][]*raft.Log{first, second} {
		if err := h.s.StoreLogs(ls); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	damage(t, h, first, second)
	return h, first, second, h.open()
}

// writeRecordsFile overwrites the test records file at off.
func writeRecordsFile(t *testing.T, h *harness, b []byte, off int64) {
	t.Helper()
	f, err := h.fsys.Open(testRecordsName)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDropsLastAppendWithoutRecords: StoreLogs syncs records and
// frames at once, so a power cut can keep the frames of the last append
// and lose its records. Open drops that append's entries (its StoreLogs
// never returned), keeps the appends before it, and the log goes on.
func TestOpenDropsLastAppendWithoutRecords(t *testing.T) {
	h, first, _, err := unbackedCase(t, func(t *testing.T, h *harness, _, second []*raft.Log) {
		off, _, _ := recordsOf(second[0])
		writeRecordsFile(t, h, make([]byte, 64), off) // the last append's records never reached the disk
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if err := checkLog(h.s, first); err != nil {
		t.Fatal(err)
	}
	again := recordsLog(3, 2, h.recs.End(), "three again")
	if err := h.s.StoreLogs([]*raft.Log{again}); err != nil {
		t.Fatal(err)
	}
	h.reopen(t)
	if err := checkLog(h.s, append(first, again)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDropsLastAppendWithOtherRecords: records of the same length but
// other bytes under the last append's frames (the records file kept
// another write there) do not match the frames' RECORDSCRC: Open drops
// the entries from the first that does not match, not only those past the
// records' end.
func TestOpenDropsLastAppendWithOtherRecords(t *testing.T) {
	h, first, second, err := unbackedCase(t, func(t *testing.T, h *harness, _, second []*raft.Log) {
		off, recs, _ := recordsOf(second[2])
		other := testRecord([]byte("FIVE"))
		if len(other) != len(recs) {
			t.Fatalf("the other record has %d bytes, the entry's %d", len(other), len(recs))
		}
		writeRecordsFile(t, h, other, off)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if err := checkLog(h.s, append(first, second[:2]...)); err != nil {
		t.Fatal(err)
	}
	off, _, _ := recordsOf(second[2])
	if h.recs.End() != off {
		t.Fatalf("records end at %d, want %d (before the dropped entry's)", h.recs.End(), off)
	}
}

// TestOpenRefusesLostRecordsOfAnEarlierAppend: an append before the last
// returned from StoreLogs, so its records were synced; records missing
// under its frames are corruption, reported, not dropped.
func TestOpenRefusesLostRecordsOfAnEarlierAppend(t *testing.T) {
	_, _, _, err := unbackedCase(t, func(t *testing.T, h *harness, first, _ []*raft.Log) {
		off, _, _ := recordsOf(first[1])
		writeRecordsFile(t, h, make([]byte, 200), off)
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with an earlier append's records lost: %v, want ErrCorrupt", err)
	}
}

// TestDeleteRecordsFromBeforeTruncation: a snapshot install truncates the
// records past the commit point. Truncated under the frames of an append
// before the last, they leave a log that does not open (the frames index
// records that are gone); deleted first with DeleteRecordsFrom, the
// entries go with their frames and the log opens without them.
func TestDeleteRecordsFromBeforeTruncation(t *testing.T) {
	for _, deleteFirst := range []bool{true, false} {
		h, err := openHarness(memfs.New(nil), 4096)
		if err != nil {
			t.Fatal(err)
		}
		r1 := recordsLog(1, 1, 0, "one")
		r2 := recordsLog(2, 1, recordsSize(r1), "two")
		cut := recordsSize(r1) + recordsSize(r2)
		appends := [][]*raft.Log{{r1, r2}, {recordsLog(3, 1, cut, "three"), sideLog(4, 1, "side")}, {sideLog(5, 1, "last")}}
		for _, ls := range appends {
			if err := h.s.StoreLogs(ls); err != nil {
				t.Fatal(err)
			}
		}
		if deleteFirst {
			if err := h.s.DeleteRecordsFrom(cut, math.MaxInt64); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.recs.Truncate(cut); err != nil { // the install's truncation
			t.Fatal(err)
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
		err = h.open()
		switch {
		case deleteFirst && err != nil:
			t.Fatalf("open after DeleteRecordsFrom and the truncation: %v", err)
		case deleteFirst:
			if err := checkLog(h.s, []*raft.Log{r1, r2}); err != nil {
				t.Fatal(err)
			}
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
		case !errors.Is(err, ErrCorrupt):
			t.Fatalf("open after the truncation alone: %v, want ErrCorrupt", err)
		}
	}
}
