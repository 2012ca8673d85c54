package engine_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestQueueOffsetAfterDeleteInOpenStore: a topic deleted and written again
// in the same open store starts at queue offset 0, although its queue's
// slot was the last one used (the put path's slot cache must forget it),
// while queues sharing a cache line keep counting.
func TestQueueOffsetAfterDeleteInOpenStore(t *testing.T) {
	s, err := engine.Open(memfs.New(nil), hooks.Manual(engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	put := func(topic string, qid int32) int64 {
		t.Helper()
		res, err := s.Put(ctx, &engine.Message{Topic: topic, QueueID: qid, Body: []byte("b")})
		if err != nil {
			t.Fatal(err)
		}
		return res.QueueOffset
	}
	for i := range 3 {
		if got := put("Other", 8); got != int64(i) { // same cache line as queue 0
			t.Fatalf("Other/8 offset %d, want %d", got, i)
		}
		if got := put("DelMe", 0); got != int64(i) {
			t.Fatalf("DelMe/0 offset %d, want %d", got, i)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("DelMe"); err != nil {
		t.Fatal(err)
	}
	if got := put("DelMe", 0); got != 0 {
		t.Fatalf("re-created DelMe/0 offset %d, want 0", got)
	}
	if got := put("Other", 8); got != 3 {
		t.Fatalf("Other/8 offset %d, want 3", got)
	}
}
