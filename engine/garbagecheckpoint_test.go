package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestGarbageCheckpointRewritten: a checkpoint holding garbage is logged
// at ERROR, recovery replays the CommitLog from its first file, and the
// checkpoint is rewritten at once from what recovery found (the last
// record's store time), so that a crash during the next run recovers from
// a valid one. It used to be taken silently as zeros and kept.
func TestGarbageCheckpointRewritten(t *testing.T) {
	afs := afero.NewMemMapFs()
	var logs bytes.Buffer
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Clock: clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), 1000*time.Millisecond)})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last engine.PutResult
	for range 50 {
		if last, err = s.Put(context.Background(), &engine.Message{Topic: "T", Body: []byte("a message body")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeAt(t, afs, "checkpoint", 0, bytes.Repeat([]byte{0xA5}, 24))

	s, err = engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Recovery().CheckpointValid {
		t.Fatal("a garbage checkpoint was taken as valid")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "checkpoint") {
		t.Fatalf("no ERROR about the checkpoint:\n%s", logs.String())
	}
	b := readAt(t, afs, "checkpoint", 0, 24)
	physic, logics := int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))
	if physic != last.StoreTimestamp || logics != last.StoreTimestamp {
		t.Fatalf("checkpoint on disk after open: physic %d, logics %d; want the last record's store time %d for both", physic, logics, last.StoreTimestamp)
	}
	engineops.Of(s).Abandon() // a crash: recovery must find the rewritten checkpoint
	s, err = engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := s.Recovery(); !r.CheckpointValid || !r.Abnormal {
		t.Fatalf("recovery after a crash: %+v; want an abnormal exit with a valid checkpoint", r)
	}
	if got := s.MaxOffsetInQueue("T", 0); got != 50 {
		t.Fatalf("T/0 holds %d messages, want 50", got)
	}
}
