package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/backend"
)

const (
	testDir         = "raft"
	testRecordsSize = 64 << 10
)

// harness is a Store on fsys with its fileRecords.
type harness struct {
	fsys    backend.FS
	segSize int64
	// noRecordsCheck opens the broken variant brokenNoRecordsCheck.
	noRecordsCheck bool
	// syncsInOrder is Options.syncsInOrder.
	syncsInOrder func() bool
	s            *Store
	recs         *fileRecords
}

func openHarness(fsys backend.FS, segSize int64) (*harness, error) {
	h := &harness{fsys: fsys, segSize: segSize}
	return h, h.open()
}

func (h *harness) open() error {
	recs, err := openFileRecords(h.fsys, testRecordsSize)
	if err != nil {
		return err
	}
	s, err := Open(Options{FS: h.fsys, Dir: testDir, Records: recs, SegmentSize: h.segSize,
		brokenNoRecordsCheck: h.noRecordsCheck, syncsInOrder: h.syncsInOrder})
	if err != nil {
		return errors.Join(err, recs.Close())
	}
	h.s, h.recs = s, recs
	return nil
}

func (h *harness) close() error { return errors.Join(h.s.Close(), h.recs.Close()) }

func (h *harness) reopen(t *testing.T) {
	t.Helper()
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	if err := h.open(); err != nil {
		t.Fatal(err)
	}
}

// recordsLog is a records entry at off holding one test record per payload.
func recordsLog(index, term uint64, off int64, payloads ...string) *raft.Log {
	var recs []byte
	for _, p := range payloads {
		recs = append(recs, testRecord([]byte(p))...)
	}
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: EncodeRecords(off, recs),
		AppendedAt: time.Unix(1700000000, int64(index))}
}

// sideLog is a side entry.
func sideLog(index, term uint64, data string) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: append([]byte{3}, data...)}
}

// recordsSize is the records bytes of a records entry.
func recordsSize(l *raft.Log) int64 { return int64(len(l.Data) - RecordsHeaderSize) }

// sameLog reports how got differs from want, or nil.
func sameLog(got, want *raft.Log) error {
	switch {
	case got.Index != want.Index || got.Term != want.Term || got.Type != want.Type:
		return fmt.Errorf("entry %d/%d type %v, want %d/%d type %v", got.Index, got.Term, got.Type, want.Index, want.Term, want.Type)
	case !bytes.Equal(got.Data, want.Data):
		return fmt.Errorf("entry %d: data %q, want %q", want.Index, got.Data, want.Data)
	case !bytes.Equal(got.Extensions, want.Extensions):
		return fmt.Errorf("entry %d: extensions %q, want %q", want.Index, got.Extensions, want.Extensions)
	case !got.AppendedAt.Equal(want.AppendedAt):
		return fmt.Errorf("entry %d: appended at %v, want %v", want.Index, got.AppendedAt, want.AppendedAt)
	}
	return nil
}

// checkLog compares the whole store with want (contiguous entries).
func checkLog(s *Store, want []*raft.Log) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	var wf, wl uint64
	if len(want) > 0 {
		wf, wl = want[0].Index, want[len(want)-1].Index
	}
	if first != wf || last != wl {
		return fmt.Errorf("log %d..%d, want %d..%d", first, last, wf, wl)
	}
	for _, w := range want {
		var got raft.Log
		if err := s.GetLog(w.Index, &got); err != nil {
			return fmt.Errorf("entry %d: %w", w.Index, err)
		}
		if err := sameLog(&got, w); err != nil {
			return err
		}
	}
	for _, i := range []uint64{wf - 1, wl + 1} {
		var got raft.Log
		if i != 0 && !errors.Is(s.GetLog(i, &got), raft.ErrLogNotFound) {
			return fmt.Errorf("entry %d outside the log %d..%d found", i, wf, wl)
		}
	}
	return nil
}
