package engine_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// The hot paths allocate nothing: a put (async flush, 128-byte body, a few
// properties) and a get of a found message with its release. AllocsPerRun
// counts every goroutine, so with background services on, the dispatcher
// and the flusher are allocation-free too.

func allocBackends(t *testing.T) map[string]backend.FS {
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]backend.FS{"memfs": memfs.New(nil), "mmap": fs}
}

func TestPutAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a quiet process without the race detector")
	}
	for _, manual := range []bool{true, false} {
		for name, fs := range allocBackends(t) {
			t.Run(name, func(t *testing.T) {
				s, err := engine.Open(fs, hooks.WithManual(engine.Config{CommitLogFileSize: 64 << 20, ConsumeQueueUnits: 1 << 16}, manual))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				m := &engine.Message{Topic: "alloc", QueueID: 1, Body: make([]byte, 128),
					Properties: map[string]string{"TAGS": "TagA", "KEYS": "order-1 order-2", "UNIQ_KEY": "0A0B0C0D0E0F"}}
				// The broker's form: the properties as the client encoded them.
				enc := &engine.Message{Topic: "alloc", QueueID: 2, Body: make([]byte, 128),
					EncodedProperties: []byte("UNIQ_KEY\x010A0B0C0D0E0F\x02WAIT\x01true\x02TAGS\x01TagA\x02CLUSTER\x01c")}
				ctx := context.Background()
				for i := 0; i < 100; i++ { // warm up buffers and the queue files
					if _, err := s.Put(ctx, m); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Put(ctx, enc); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.WaitDispatched(ctx, s.CommitLog().MaxOffset()); err != nil {
					t.Fatal(err)
				}
				allocs := testing.AllocsPerRun(1000, func() {
					if _, err := s.Put(ctx, m); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Put(ctx, enc); err != nil {
						t.Fatal(err)
					}
					if manual {
						if _, err := engineops.Of(s).Dispatch(); err != nil {
							t.Fatal(err)
						}
					}
				})
				if allocs != 0 {
					t.Fatalf("manual=%v: %.2f allocations per two puts (map and encoded properties)", manual, allocs)
				}
			})
		}
	}
}

func TestGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop results")
	}
	for name, fs := range allocBackends(t) {
		t.Run(name, func(t *testing.T) {
			s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for i := 0; i < 64; i++ {
				if _, err := s.Put(ctx, &engine.Message{Topic: "g", Body: make([]byte, 128),
					Properties: map[string]string{"TAGS": "A"}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.WaitDispatched(ctx, s.CommitLog().MaxOffset()); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				r, err := s.GetMessage("g", 0, 3, 16, nil)
				if err != nil || r.Status != engine.Found || len(r.Messages) != 16 {
					t.Fatalf("get: %v %v", r.Status, err)
				}
				r.Release()
			})
			if allocs != 0 {
				t.Fatalf("%.2f allocations per get", allocs)
			}
		})
	}
}

// TestSyncPutAllocs: a SYNC_FLUSH put on mmap writes its record with
// pwritev (backend.Pwriter) and syncs it, allocating nothing either.
// Manual mode syncs in the put itself; the group-commit service's wake-ups
// are outside this count.
func TestSyncPutAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a quiet process without the race detector")
	}
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 64 << 20, ConsumeQueueUnits: 1 << 16,
		FlushDiskType: engine.SyncFlush}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := &engine.Message{Topic: "alloc", QueueID: 1, Body: make([]byte, 4096),
		EncodedProperties: []byte("UNIQ_KEY\x010A0B0C0D0E0F\x02TAGS\x01TagA\x02")}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := s.Put(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Put(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := engineops.Of(s).Dispatch(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.2f allocations per sync put", allocs)
	}
}
