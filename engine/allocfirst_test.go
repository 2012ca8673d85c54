package engine

import (
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
)

// TestFirstCommitLogFilePrepared checks that an empty store prepares its
// CommitLog's first file when it starts, so that the first put takes it
// instead of creating it under the put lock, and that a store closed
// before any put leaves no CommitLog file behind.
func TestFirstCommitLogFilePrepared(t *testing.T) {
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000}
	s, err := Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	prepared := waitPrepared(t, s, fs, 0)
	if _, err := s.Put(context.Background(), &Message{Topic: "T", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := s.commitLog.q.firstFile(); got != prepared {
		t.Fatalf("the first put created its own file %p, not the prepared %p", got, prepared)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Closed before any put: the prepared file goes again.
	dir2 := t.TempDir()
	fs2, err := mmap.New(dir2)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(fs2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitPrepared(t, s2, fs2, 0)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if names, _ := fs2.List("commitlog"); len(names) != 0 {
		t.Fatalf("commitlog holds %v after a close without puts", names)
	}
}

// waitPrepared waits for the preparation of the CommitLog file at from,
// which Open or a put has started (the allocator is asked in their
// goroutine), checks that the file is on disk and returns it.
func waitPrepared(t *testing.T, s *Store, fs backend.FS, from int64) *mappedFile {
	t.Helper()
	a := s.commitLog.q.alloc
	a.mu.Lock()
	done, at := a.done, a.from
	a.mu.Unlock()
	if done == nil || at != from {
		t.Fatalf("the file at %d is not being prepared (preparing: %v, at %d)", from, done != nil, at)
	}
	select {
	case <-done: // the preparation has handed the file over
	case <-time.After(10 * time.Second):
		t.Fatalf("the file at %d not prepared within 10 s", from)
	}
	a.mu.Lock()
	mf, err := a.mf, a.err
	a.mu.Unlock()
	if mf == nil {
		t.Fatalf("no file prepared at %d: %v", from, err)
	}
	if _, err := fs.Stat("commitlog/" + offsetToFileName(from)); err != nil {
		t.Fatalf("the prepared file at %d is not on disk: %v", from, err)
	}
	return mf
}

// TestNextCommitLogFilePreparedHalfWay checks that the file after the one
// the writer took is prepared once the writer is half way through it (not
// at once, beside the first puts), and that the roll then takes it.
func TestNextCommitLogFilePreparedHalfWay(t *testing.T) {
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const size = 8 << 20
	s, err := Open(fs, Config{CommitLogFileSize: size, ConsumeQueueUnits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	put := func() {
		t.Helper()
		if _, err := s.Put(ctx, &Message{Topic: "T", Body: make([]byte, 64<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	put()
	next := "commitlog/" + offsetToFileName(size)
	// Asked for or not is decided under the allocator's lock by the put
	// itself: the next file is only pending, for half way through.
	a := s.commitLog.q.alloc
	a.mu.Lock()
	asked, pending, at := a.from == size, a.pending && a.nextFrom == size, a.nextAt
	a.mu.Unlock()
	if asked || !pending || at != size/2 {
		t.Fatalf("after the first put: next file asked for %v, pending %v at %d; want pending for %d", asked, pending, at, size/2)
	}
	if _, err := fs.Stat(next); err == nil {
		t.Fatal("the next file was prepared at the first put")
	}
	for s.commitLog.q.MaxOffset() < size/2+prefaultStep {
		put()
	}
	prepared := waitPrepared(t, s, fs, size)
	for s.commitLog.q.MaxOffset() < size {
		put()
	}
	if got := s.commitLog.q.lastFile(); got != prepared || got.fileFromOffset != size {
		t.Fatalf("rolled to %p at %d, not the prepared %p", got, got.fileFromOffset, prepared)
	}
}
