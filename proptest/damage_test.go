package proptest

import (
	"context"
	"fmt"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// damagedStore writes messages into three 4 KiB CommitLog files, closes
// the store cleanly and flips a bit in the body of a message of the first
// file: damage in the middle of a log that was entirely synced.
func damagedStore(t *testing.T) (afero.Fs, []engine.PutResult, int) {
	t.Helper()
	afs := afero.NewMemMapFs()
	s, err := engine.Open(memfs.New(afs), hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet}))
	if err != nil {
		t.Fatal(err)
	}
	var puts []engine.PutResult
	for i := 0; s.CommitLog().MaxOffset() < 2*4096+1000; i++ {
		r, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: int32(i % 2), Body: []byte(fmt.Sprintf("body %03d of a synced message", i))})
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	victim := 3
	off := puts[victim].WroteOffset + int64(puts[victim].WroteBytes) - 20
	f, err := afs.OpenFile(fmt.Sprintf("commitlog/%020d", off/4096*4096), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, off%4096)
	b[0] ^= 0x08
	f.WriteAt(b, off%4096)
	f.Close()
	return afs, puts, victim
}

// checkDamageKeepsRest is P1 for a store with one damaged record: every
// other acknowledged (and synced) message is recovered at its offset.
func checkDamageKeepsRest(s *engine.Store, puts []engine.PutResult, victim int) error {
	for i, p := range puts {
		if i == victim {
			continue
		}
		if _, err := s.LookMessageByOffset(p.WroteOffset); err != nil {
			return fmt.Errorf("P1: synced message %d at commitlog offset %d lost after damage to message %d: %v", i, p.WroteOffset, victim, err)
		}
	}
	return nil
}

// TestBrokenVariantTruncateAtDamage shows that resynchronising past a
// damaged record is necessary: RocketMQ's truncation at the first bad
// record (the TruncateAtDamage hook) loses synced messages, and P1 says so.
func TestBrokenVariantTruncateAtDamage(t *testing.T) {
	for _, broken := range []bool{false, true} {
		afs, puts, victim := damagedStore(t)
		cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet})
		hooks.EngineOf(&cfg).TruncateAtDamage = broken
		s, err := engine.Open(memfs.New(afs), cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = checkDamageKeepsRest(s, puts, victim)
		s.Close()
		switch {
		case !broken && err != nil:
			t.Fatalf("resynchronising recovery: %v", err)
		case broken && (err == nil || err.Error()[:3] != "P1:"):
			t.Fatalf("variant TruncateAtDamage: want a P1 violation, got %v", err)
		}
	}
}
