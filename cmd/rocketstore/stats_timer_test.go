package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/engine"
)

// TestStatsShowsPendingTimers: stats reports the pending timer messages
// of each topic from the timer checkpoint a closed broker left.
func TestStatsShowsPendingTimers(t *testing.T) {
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.Open(fs, broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	tc := config.NewTopicConfig("Later")
	tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
	if err := b.Topics().Update(tc); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := b.SendMessage(context.Background(), &broker.SendRequest{Topic: "Later", Properties: "TIMER_DELAY_SEC\x013600",
			Body: []byte("x")}); r.Code != broker.Success {
			t.Fatalf("%+v", r)
		}
	}
	if err := b.Store().WaitDispatched(context.Background(), b.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // enqueues what is left and checkpoints
		t.Fatal(err)
	}
	st, err := collectStats(dir, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if st.TimersPending["Later"] != 3 {
		t.Fatalf("pending %v", st.TimersPending)
	}
	var out bytes.Buffer
	if err := printStats(&out, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "TIMER TOPIC") || !strings.Contains(out.String(), "Later        3") {
		t.Fatalf("stats output:\n%s", out.String())
	}
}
