package engine_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
)

// Abnormal recovery with the parsers running (several MiB of records) puts
// every record's unit in its own queue when the records interleave topics
// of one length and queues in runs of every length, across region ends:
// the scan reuses the previous record's queue on the parsers' same-queue
// hint, which must tell "ta"/0 from "tb"/0 and from "ta"/1.
func TestRecoveryDispatchesInterleavedQueues(t *testing.T) {
	const n = 12_000 // ~7 MiB of records
	dir := t.TempDir()
	type queue struct {
		topic string
		id    int32
	}
	s := openRecoveryStore(t, dir)
	want := map[queue][]int64{}
	for i := range n {
		// Runs of 1, 2, 3, ... records, topic and queue changing apart.
		run := 1
		for k := i; k >= run; run++ {
			k -= run
		}
		// Each change of run changes the topic or the queue, not both.
		q := []queue{{"ta", 0}, {"ta", 1}, {"tb", 1}, {"tb", 0}}[run%4]
		m := &engine.Message{Topic: q.topic, QueueID: q.id, Body: make([]byte, 512), Properties: map[string]string{"TAGS": "T"}}
		res, err := s.Put(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		want[q] = append(want[q], res.WroteOffset)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	engine.MarkCrashedKeepingCommitLog(t, dir)
	s = openRecoveryStore(t, dir)
	defer s.Close()
	if rep := s.Recovery(); !rep.Abnormal || rep.Redispatched != n {
		t.Fatalf("recovery %+v, want abnormal with %d records re-dispatched", rep, n)
	}
	if len(want) != 4 {
		t.Fatalf("the records went to %d queues, want 4", len(want))
	}
	for q, offs := range want {
		var got []int64
		for next := int64(0); next < int64(len(offs)); {
			res, err := s.GetMessage(q.topic, q.id, next, 32, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != engine.Found {
				t.Fatalf("queue %v at %d: %v", q, next, res.Status)
			}
			for _, m := range res.Messages {
				got = append(got, m.CommitLogOffset)
			}
			next = res.NextBeginOffset
			res.Release()
		}
		if len(got) != len(offs) {
			t.Fatalf("queue %v holds %d units, want %d", q, len(got), len(offs))
		}
		for i := range offs {
			if got[i] != offs[i] {
				t.Fatalf("queue %v unit %d points at %d, want %d", q, i, got[i], offs[i])
			}
		}
	}
}
