package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
)

// damagedAfterCrash writes 40 messages to t/0 in 4 KiB CommitLog files,
// closes, then makes the store look crashed with no checkpoint and flips a
// bit in the body of message 10: damage a writer cannot classify.
func damagedAfterCrash(t *testing.T) (string, []engine.PutResult) {
	t.Helper()
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64})
	if err != nil {
		t.Fatal(err)
	}
	var puts []engine.PutResult
	for i := range 40 {
		r, err := s.Put(context.Background(), &engine.Message{Topic: "t", Body: []byte(fmt.Sprintf("message number %03d, not zero", i))})
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
	must(t, os.Remove(filepath.Join(dir, "checkpoint")))
	off := puts[10].WroteOffset + int64(puts[10].WroteBytes) - 20 // in the body
	name := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", off/4096*4096))
	b, err := os.ReadFile(name)
	must(t, err)
	b[off%4096] ^= 0x01
	must(t, os.WriteFile(name, b, 0o644))
	return dir, puts
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadShowsIntactMessagesOfADamagedStore: where a
// writer refuses to open (undecidable damage), `read` still shows every
// intact message and says what it skipped, never "0 messages".
func TestReadShowsIntactMessagesOfADamagedStore(t *testing.T) {
	dir, _ := damagedAfterCrash(t)
	fs, err := mmap.New(dir)
	must(t, err)
	if _, err := engine.Open(fs, engine.Config{}); !errors.Is(err, engine.ErrUndecidableDamage) {
		t.Fatalf("writer open: %v, want ErrUndecidableDamage", err)
	}
	var out, errOut bytes.Buffer
	if err := runRead(&out, &errOut, readOptions{dir: dir, topic: "t", queue: 0, offset: -1, max: 100}); err != nil {
		t.Fatalf("read: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "39 message(s)") || !strings.Contains(out.String(), "message number 039") {
		t.Fatalf("read of a damaged store:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "1 damaged commitlog record(s) skipped") {
		t.Fatalf("read does not say what it skipped:\n%s", errOut.String())
	}
}

// TestInspectionRefusesWhatIsNotThere: `read` of a
// queue the store does not hold and `stats` of a directory that is not a
// store fail instead of printing empty results with exit 0.
func TestInspectionRefusesWhatIsNotThere(t *testing.T) {
	dir, _ := damagedAfterCrash(t)
	var out, errOut bytes.Buffer
	if code := execute([]string{"read", "--dir", dir, "--topic", "NoSuchTopic", "--queue", "0"}, &out, &errOut); code != exitFailed ||
		!strings.Contains(errOut.String(), "no queue NoSuchTopic/0") {
		t.Fatalf("read of a missing topic: exit %d, stderr %s", code, errOut.String())
	}
	empty := t.TempDir()
	errOut.Reset()
	if code := execute([]string{"stats", "--dir", empty}, &out, &errOut); code == exitOK || !strings.Contains(errOut.String(), "not a rocketstore or RocketMQ store") {
		t.Fatalf("stats of an empty directory: exit %d, stderr %s", code, errOut.String())
	}
}
