package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestRecoveryDropsEmptyLastConsumeQueueFile: a recovery after a crash that
// cuts a queue at the start of its last file zeroes and syncs that file,
// then removes it. A power cut between the two leaves the file, all zeros,
// behind; the recovery that follows must remove it too, or an interrupted
// and redone recovery keeps a file that one recovery does not (P4). The queue's offsets are the same either way.
func TestRecoveryDropsEmptyLastConsumeQueueFile(t *testing.T) {
	afs := afero.NewMemMapFs()
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), 10_000*time.Millisecond)})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 1500) // two records a CommitLog file
	for i := range 6 {
		// Four fill T/0's first ConsumeQueue file; the last two, to T/1,
		// fill the third CommitLog file, where recovery's scan starts
		// (the checkpoint covers the first of them).
		if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: int32(i / 4), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	engineops.Of(s).Abandon() // abort marker left: the next Open recovers as after a crash
	empty := fmt.Sprintf("consumequeue/T/0/%020d", 4*engine.CQUnitSize)
	if err := afero.WriteFile(afs, empty, make([]byte, 4*engine.CQUnitSize), 0o644); err != nil {
		t.Fatal(err)
	}

	s, err = engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep := s.Recovery(); !rep.Abnormal || rep.ScanFrom != 8192 {
		t.Fatalf("recovery %+v, want an abnormal one scanning from 8192", rep)
	}
	if ok, _ := afero.Exists(afs, empty); ok {
		t.Fatalf("%s, empty, survived recovery", empty)
	}
	if lo, hi := s.MinOffsetInQueue("T", 0), s.MaxOffsetInQueue("T", 0); lo != 0 || hi != 4 {
		t.Fatalf("T/0 offsets [%d, %d), want [0, 4)", lo, hi)
	}
	// The queue grows into a new file as before.
	if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: 0, Body: []byte("next")}); err != nil {
		t.Fatal(err)
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if hi := s.MaxOffsetInQueue("T", 0); hi != 5 {
		t.Fatalf("T/0 max offset %d after a put, want 5", hi)
	}
}
