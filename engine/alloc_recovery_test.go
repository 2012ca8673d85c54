package engine_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// Abnormal recovery (every record CRC-checked and re-dispatched) does not
// allocate per record.
func TestRecoveryAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a quiet process without the race detector")
	}
	const n = 20_000
	dir := t.TempDir()
	s := openRecoveryStore(t, dir)
	m := &engine.Message{Topic: "alloc", QueueID: 1, Body: make([]byte, 128),
		Properties: map[string]string{"TAGS": "TagA", "KEYS": "order-1", "UNIQ_KEY": "0A0B0C0D0E0F"}}
	for range n {
		if _, err := s.Put(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it look crashed, with nothing to trust but the CommitLog.
	engine.MarkCrashedKeepingCommitLog(t, dir)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s = openRecoveryStore(t, dir)
	runtime.ReadMemStats(&after)
	defer s.Close()
	if rep := s.Recovery(); !rep.Abnormal || rep.Redispatched != n {
		t.Fatalf("recovery %+v, want abnormal with %d records re-dispatched", rep, n)
	}
	if allocs := after.Mallocs - before.Mallocs; allocs > n/10 {
		t.Fatalf("recovery of %d records made %d allocations", n, allocs)
	}
}

// openRecoveryStore opens a manual-mode store on the mmap backend in dir
// with 16 MiB CommitLog files, for the recovery tests that close and
// reopen one.
func openRecoveryStore(t *testing.T, dir string) *engine.Store {
	t.Helper()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 16 << 20, ConsumeQueueUnits: 1 << 16}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
