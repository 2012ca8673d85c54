package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// writeCounts counts how the CommitLog's segments are written.
type writeCounts struct{ writeAt, pwrite, prefaultWrite, prefaultRead atomic.Int64 }

// countingFS wraps an FS so that the CommitLog segments count their
// writes, passing the optional Pwriter and WritePrefaulter through.
type countingFS struct {
	backend.FS
	c *writeCounts
}

func (f countingFS) Create(name string, size int64) (backend.Segment, error) {
	seg, err := f.FS.Create(name, size)
	if err != nil || !strings.HasPrefix(name, "commitlog/") {
		return seg, err
	}
	return countingSeg{seg, f.c}, nil
}

type countingSeg struct {
	backend.Segment
	c *writeCounts
}

func (s countingSeg) WriteAt(p []byte, off int64) (int, error) {
	s.c.writeAt.Add(1)
	return s.Segment.WriteAt(p, off)
}

func (s countingSeg) Pwrite(pieces [][]byte, off int64) (int, error) {
	s.c.pwrite.Add(1)
	return s.Segment.(backend.Pwriter).Pwrite(pieces, off)
}

func (s countingSeg) PrefaultRead(off, n int64) error {
	s.c.prefaultRead.Add(1)
	return s.Segment.(backend.ReadPrefaulter).PrefaultRead(off, n)
}

func (s countingSeg) PrefaultWrite(off, n int64) error {
	s.c.prefaultWrite.Add(1)
	return s.Segment.(backend.WritePrefaulter).PrefaultWrite(off, n)
}

// TestSyncFlushWritesThrough: under SYNC_FLUSH the CommitLog is written
// with Pwrite, one call per record, and prefaulted read-only, never
// writable (a page mapped writable would cost every sync a TLB shootdown
// again); under ASYNC_FLUSH it is copied into a write-prefaulted mapping. Either way
// the messages read back.
func TestSyncFlushWritesThrough(t *testing.T) {
	for _, flush := range []engine.FlushDiskType{engine.SyncFlush, engine.AsyncFlush} {
		fs, err := mmap.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c := &writeCounts{}
		s, err := engine.Open(countingFS{fs, c}, engine.Config{CommitLogFileSize: 16 << 20, FlushDiskType: flush})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		const n = 20
		for i := 0; i < n; i++ {
			if _, err := s.Put(ctx, &engine.Message{Topic: "w", Body: []byte(strings.Repeat("x", 100+i))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.WaitDispatched(ctx, s.CommitLog().MaxOffset()); err != nil {
			t.Fatal(err)
		}
		r, err := s.GetMessage("w", 0, 0, n, nil)
		if err != nil || len(r.Messages) != n {
			t.Fatalf("%v: get: %d messages, %v", flush, len(r.Messages), err)
		}
		for i, v := range r.Messages {
			m, err := record.Decode(v.Record, v.CommitLogOffset, true)
			if err != nil {
				t.Fatalf("%v: message %d: %v", flush, i, err)
			}
			if string(m.Body) != strings.Repeat("x", 100+i) {
				t.Fatalf("%v: message %d has %d body bytes, want %d", flush, i, len(m.Body), 100+i)
			}
		}
		r.Release()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wa, pw, pf, pr := c.writeAt.Load(), c.pwrite.Load(), c.prefaultWrite.Load(), c.prefaultRead.Load()
		if flush == engine.SyncFlush && (pw != n || wa != 0 || pf != 0 || pr == 0) {
			t.Errorf("sync flush: %d pwrites (want %d), %d WriteAt, %d write prefaults (want 0), %d read prefaults (want some)",
				pw, n, wa, pf, pr)
		}
		if flush == engine.AsyncFlush && (pw != 0 || wa < n || pf == 0 || pr != 0) {
			t.Errorf("async flush: %d pwrites (want 0), %d WriteAt (want ≥ %d), %d write prefaults (want some), %d read prefaults (want 0)",
				pw, wa, n, pf, pr)
		}
	}
}
