package logrecords_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/cluster/logrecords"
	"github.com/rocketstore/rocketstore/cluster/raftlog"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// replica is an engine store of replicated records and the raftlog store
// that keeps its records entries in that store's CommitLog.
type replica struct {
	s   *engine.Store
	ops engineops.Ops
	log *raftlog.Store
}

func newReplica(t *testing.T) *replica {
	t.Helper()
	s, err := engine.Open(memfs.New(nil), engineops.WithRecords(hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64}), 0))
	if err != nil {
		t.Fatal(err)
	}
	l, err := raftlog.Open(raftlog.Options{FS: memfs.New(nil), Dir: "log", Records: logrecords.New(s)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return &replica{s: s, ops: engineops.Of(s), log: l}
}

func (r *replica) commitLog(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, r.ops.RecordsEnd())
	if err := r.ops.ReadRecords(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func msgs(n, seed int) []*engine.Message {
	out := make([]*engine.Message, n)
	for i := range out {
		out[i] = &engine.Message{Topic: "t", QueueID: int32((seed + i) % 2), Body: bytes.Repeat([]byte("m"), 50+(seed+i)*13%200)}
	}
	return out
}

// TestRecordsUnderRaftLog runs the raftlog LogStore over two replicas'
// CommitLogs: the leader's rounds, stored as records entries by both,
// read back whole, leave byte-identical CommitLogs; a committed entry is
// served; deleting an uncommitted tail truncates the CommitLog and hands
// its queue offsets out again; truncating committed records is refused.
func TestRecordsUnderRaftLog(t *testing.T) {
	leader, follower := newReplica(t), newReplica(t)
	var entries []*raft.Log
	for round := range 8 {
		pending := msgs(6, round*6)
		for len(pending) > 0 {
			b, err := leader.ops.BuildRecords(pending)
			if err != nil {
				t.Fatal(err)
			}
			pending = pending[len(b.Results):]
			l := &raft.Log{Index: uint64(len(entries) + 1), Term: 1, Type: raft.LogCommand, Data: raftlog.EncodeRecords(b.Offset, b.Bytes)}
			entries = append(entries, l)
			for _, r := range []*replica{leader, follower} {
				if err := r.log.StoreLogs([]*raft.Log{l}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !bytes.Equal(leader.commitLog(t), follower.commitLog(t)) {
		t.Fatal("the replicas' commitlogs differ")
	}
	for _, l := range entries {
		var got raft.Log
		if err := follower.log.GetLog(l.Index, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, l.Data) {
			t.Fatalf("entry %d reads back different", l.Index)
		}
	}
	// Commit up to the fifth entry's end; the sixth on is the tail.
	commit := int64(binary.BigEndian.Uint64(entries[5].Data[1:raftlog.RecordsHeaderSize]))
	if err := follower.ops.SetCommitPoint(commit); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	// Raft never deletes committed entries; the records refuse it.
	third := int64(binary.BigEndian.Uint64(entries[2].Data[1:raftlog.RecordsHeaderSize]))
	if err := logrecords.New(follower.s).Truncate(third); !errors.Is(err, engine.ErrCommitted) {
		t.Fatalf("truncating committed records: %v, want ErrCommitted", err)
	}
	tail := entries[5:]
	if err := follower.log.DeleteRange(tail[0].Index, uint64(len(entries))); err != nil {
		t.Fatal(err)
	}
	if end := follower.ops.RecordsEnd(); end != commit {
		t.Fatalf("after deleting the tail the commitlog ends at %d, want %d", end, commit)
	}
	served := follower.s.MaxOffsetInQueue("t", 0) + follower.s.MaxOffsetInQueue("t", 1)
	b, err := follower.ops.BuildRecords(msgs(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(b.Results[0].QueueOffset+b.Results[1].QueueOffset), fmt.Sprint(served); got != want {
		t.Fatalf("the new leader's first queue offsets sum to %s, want %s (the committed messages' count, one queue each)", got, want)
	}
}

// TestReadAtGone reads records that retention removed: the error wraps
// raftlog.ErrGone (on which raftlog's GetLog answers raft.ErrLogNotFound
// and Raft sends a snapshot). Retention removes only files the dispatcher
// passed, so never uncommitted records.
func TestReadAtGone(t *testing.T) {
	r := newReplica(t)
	for round := 0; r.ops.RecordsEnd() < 3*4096; round++ {
		pending := msgs(6, round*6)
		for len(pending) > 0 {
			b, err := r.ops.BuildRecords(pending)
			if err != nil {
				t.Fatal(err)
			}
			pending = pending[len(b.Results):]
			if err := r.ops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs := logrecords.New(r.s)
	if _, err := r.s.DeleteExpiredFiles(time.Now(), engine.RetentionPolicy{}, true); err != nil {
		t.Fatal(err)
	}
	if min := r.s.CommitLog().MinOffset(); min != 0 {
		t.Fatalf("retention removed uncommitted records: the commitlog starts at %d", min)
	}
	if err := r.ops.SetCommitPoint(r.ops.RecordsEnd()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := r.ops.FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.DeleteExpiredFiles(time.Now(), engine.RetentionPolicy{}, true); err != nil {
		t.Fatal(err)
	}
	min := r.s.CommitLog().MinOffset()
	if min == 0 {
		t.Fatal("retention removed no file")
	}
	if err := recs.ReadAt(make([]byte, 10), 0); !errors.Is(err, raftlog.ErrGone) {
		t.Fatalf("ReadAt below the first kept file: %v, want ErrGone", err)
	}
	if err := recs.ReadAt(make([]byte, 10), min); err != nil {
		t.Fatalf("ReadAt at the first kept offset: %v", err)
	}
}
