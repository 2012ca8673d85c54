package snapshot_test

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/backendtest"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/backend/snapshot"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

func TestContract(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.FS { return snapshot.New(memfs.New(nil)) })
}

// treeHash hashes every file under dir with its path.
func treeHash(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(p))
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// A reader is refused while a writer holds the store, with a clear error.
func TestRefusedWhileWriterHoldsStore(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(must(mmap.New(dir)), hooks.Manual(engine.Config{CommitLogFileSize: 4096}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = engine.Open(snapshot.New(must(mmap.NewReadOnly(dir))), hooks.Manual(engine.Config{}))
	if !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("open while a writer holds the store: %v, want ErrLocked", err)
	}
}

func TestReaderLeavesFilesAlone(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(must(mmap.New(dir)), hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 8}))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		s.Put(t.Context(), &engine.Message{Topic: "t", QueueID: int32(i % 3), Body: []byte("hello")})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "consumequeue"))
	os.Remove(filepath.Join(dir, "checkpoint"))
	before := treeHash(t, dir)
	r, err := engine.Open(snapshot.New(must(mmap.NewReadOnly(dir))), hooks.Manual(engine.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	for q := int32(0); q < 3; q++ {
		if got := r.MaxOffsetInQueue("t", q); got != 10 {
			t.Fatalf("queue %d: %d messages, want 10", q, got)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatal("opening through the snapshot changed the store directory")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
