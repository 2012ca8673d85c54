package engine_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// TestDeletedTopicStaysDeleted: a topic deleted and
// then stopped cleanly, or killed, does not come back with its old
// messages, and verify knows the records of a deleted topic have no queue.
func TestDeletedTopicStaysDeleted(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := map[bool]string{false: "clean stop", true: "kill"}[kill]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fs, err := mmap.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64})
			s, err := engine.Open(fs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 3 {
				if _, err := s.Put(ctx, &engine.Message{Topic: "DelMe", Body: []byte{byte(i)}}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Put(ctx, &engine.Message{Topic: "Keep", Body: []byte{byte(i)}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Dispatch(); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteTopic("DelMe"); err != nil {
				t.Fatal(err)
			}
			if kill {
				s.Abandon() // a SIGKILL: nothing more flushed, abort marker left
			} else if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := verify.Run(mustMmap(t, dir), verify.Options{}); err != nil || rep.Count(verify.KindMissing) != 0 {
				t.Fatalf("verify after delete and %s: %v\n%s", name, err, rep.Summary())
			}
			s, err = engine.Open(mustMmap(t, dir), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.MaxOffsetInQueue("DelMe", 0); got != 0 || len(s.Topics()["DelMe"]) != 0 {
				t.Fatalf("deleted topic came back after %s: max offset %d, queues %v", name, got, s.Topics()["DelMe"])
			}
			if got := s.MaxOffsetInQueue("Keep", 0); got != 3 {
				t.Fatalf("Keep/0 max offset %d after %s, want 3", got, name)
			}
			// A topic of the same name starts again at queue offset 0.
			res, err := s.Put(ctx, &engine.Message{Topic: "DelMe", Body: []byte("again")})
			if err != nil || res.QueueOffset != 0 {
				t.Fatalf("put to a re-created topic: %v, queue offset %d", err, res.QueueOffset)
			}
			if _, err := s.Dispatch(); err != nil || s.MaxOffsetInQueue("DelMe", 0) != 1 {
				t.Fatalf("re-created topic not dispatched: %v", err)
			}
		})
	}
}

func mustMmap(t *testing.T, dir string) *mmap.FS {
	t.Helper()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
