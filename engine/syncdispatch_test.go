package engine_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
)

// With SyncFlush the dispatcher never runs ahead of the flushed position:
// a consumer never sees a message that a power cut could take back.
func TestSyncFlushDispatchesOnlyFlushed(t *testing.T) {
	s, err := engine.Open(memfs.New(nil), engine.Config{CommitLogFileSize: 64 << 10, FlushDiskType: engine.SyncFlush})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var last engine.PutResult
	for i := 0; i < 300; i++ {
		wait := "true"
		if i%3 == 0 {
			wait = "false" // not waited for, but still flushed and dispatched
		}
		if last, err = s.Put(ctx, &engine.Message{Topic: "t", Body: []byte("x"),
			Properties: map[string]string{"WAIT": wait}}); err != nil {
			t.Fatal(err)
		}
		if r, f := engineops.Of(s).ReputFromOffset(), s.CommitLog().FlushedWhere(); r > f {
			t.Fatalf("dispatched up to %d, flushed only to %d", r, f)
		}
	}
	if err := s.WaitDispatched(ctx, last.WroteOffset+int64(last.WroteBytes)); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxOffsetInQueue("t", 0); got != 300 {
		t.Fatalf("queue holds %d, want 300", got)
	}
}
