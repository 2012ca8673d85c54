package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// The statuses that need files to disappear under the ConsumeQueue (the
// retention service's race) are tested here, with the engine's internals,
// over both backends.

func forBackends(t *testing.T, fn func(t *testing.T, fs backend.FS)) {
	t.Run("memfs", func(t *testing.T) { fn(t, memfs.New(nil)) })
	t.Run("mmap", func(t *testing.T) {
		fs, err := mmap.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, fs)
	})
}

func openTiny(t *testing.T, fs backend.FS, units int64) *Store {
	t.Helper()
	s, err := Open(fs, hooks.Manual(Config{CommitLogFileSize: 4096, ConsumeQueueUnits: units}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustPut(t *testing.T, s *Store, topic string, body string) PutResult {
	t.Helper()
	r, err := s.Put(context.Background(), &Message{Topic: topic, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func status(t *testing.T, s *Store, topic string, off int64) (GetMessageStatus, int64, int) {
	t.Helper()
	r, err := s.GetMessage(topic, 0, off, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	return r.Status, r.NextBeginOffset, len(r.Messages)
}

func TestMessageWasRemoving(t *testing.T) {
	forBackends(t, func(t *testing.T, fs backend.FS) {
		s := openTiny(t, fs, 64)
		for s.CommitLog().MaxOffset() < 2*4096 {
			mustPut(t, s, "w", fmt.Sprintf("%0200d", 1))
		}
		for s.CommitLog().MaxOffset() < 3*4096 {
			mustPut(t, s, "other", "x")
		}
		if _, err := s.dispatchPass(); err != nil {
			t.Fatal(err)
		}
		n := s.MaxOffsetInQueue("w", 0)
		// Delete every CommitLog file but the last, without correcting
		// the ConsumeQueue's minimum (as a reader racing retention sees).
		if _, err := s.commitLog.q.deleteFirstFiles(func(mf *mappedFile) bool { return false }); err != nil {
			t.Fatal(err)
		}
		st, next, found := status(t, s, "w", 0)
		if st != MessageWasRemoving || next != min(n, 32) || found != 0 {
			t.Fatalf("got %v next %d found %d, want MESSAGE_WAS_REMOVING next %d", st, next, found, min(n, 32))
		}
	})
}

func TestOffsetFoundNull(t *testing.T) {
	forBackends(t, func(t *testing.T, fs backend.FS) {
		s := openTiny(t, fs, 8)
		for i := 0; i < 20; i++ {
			mustPut(t, s, "n", "x")
		}
		if _, err := s.dispatchPass(); err != nil {
			t.Fatal(err)
		}
		cq := s.queues.find("n", 0)
		if _, err := cq.q.deleteFirstFiles(func(mf *mappedFile) bool { return mf.fileFromOffset > 0 }); err != nil {
			t.Fatal(err)
		}
		st, next, _ := status(t, s, "n", 2)
		if st != OffsetFoundNull || next != 8 {
			t.Fatalf("got %v next %d, want OFFSET_FOUND_NULL next 8", st, next)
		}
		if st, next, _ := status(t, s, "n", 8); st != Found || next != 16 {
			t.Fatalf("after the hole: %v next %d", st, next)
		}
	})
}
