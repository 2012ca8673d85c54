package enginetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

var restartTests = []test{
	{"CleanClose", testCleanClose},
	{"CrashKeepsSynced", testCrashKeepsSynced},
	{"CrashSyncFlushDurable", testCrashSyncFlush},
	{"CrashTwice", testCrashTwice},
	{"CrashScanFromCheckpoint", testCrashFromCheckpoint},
	{"CloseIsIdempotent", testCloseIdempotent},
	{"CloseUnderLoad", testCloseUnderLoad},
}

var dispatchTests = []test{
	{"IdempotentRedispatch", testIdempotentRedispatch},
	{"CheckpointTimestamps", testCheckpoint},
	{"ManualFlushPositions", testFlushPositions},
}

// bodies reads a whole queue's bodies.
func bodies(t *testing.T, s *engine.Store, topic string, qid int32) []string {
	t.Helper()
	var out []string
	for off := s.MinOffsetInQueue(topic, qid); ; {
		g := get(t, s, topic, qid, off, 32, nil)
		if g.status == engine.OffsetOverflowOne || g.status == engine.NoMessageInQueue || g.status == engine.NoMatchedLogicQueue {
			return out
		}
		if g.status != engine.Found {
			t.Fatalf("%s/%d at %d: %v", topic, qid, off, g)
		}
		for _, m := range g.msgs {
			out = append(out, string(m.Body))
		}
		off = g.next
	}
}

func testCleanClose(t *testing.T, h *harness) {
	cfg := tinyConfig()
	s := h.open(cfg)
	for i := 0; i < 100; i++ {
		put(t, s, msg("cc", int32(i%3), fmt.Sprint("clean ", i), "T", fmt.Sprint("k", i)))
	}
	dispatched(t, s)
	want := [3][]string{}
	for q := int32(0); q < 3; q++ {
		want[q] = bodies(t, s, "cc", q)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := allFiles(t, h.fs, "consumequeue")
	if _, err := h.fs.Stat("abort"); err == nil {
		t.Fatal("abort marker left after a clean close")
	}
	s = h.open(cfg)
	r := s.Recovery()
	if r.Abnormal || r.StopReason != nil || r.DroppedBytes != 0 || r.ConsumeQueuesRebuilt || r.Redispatched != 0 {
		t.Fatalf("recovery after clean close: %+v", r)
	}
	if _, err := h.fs.Stat("abort"); err != nil {
		t.Fatalf("abort marker missing while running: %v", err)
	}
	for q := int32(0); q < 3; q++ {
		if got := bodies(t, s, "cc", q); !slices.Equal(got, want[q]) {
			t.Fatalf("queue %d after restart: %v", q, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := allFiles(t, h.fs, "consumequeue"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatal("consume queue files changed across a clean restart")
	}
	s = h.open(cfg)
	if res := put(t, s, msg("cc", 1, "next", "", "")); res.QueueOffset != 33 {
		t.Fatalf("queue offset after restart %d, want 33", res.QueueOffset)
	}
}

// testCrashKeepsSynced: synced data survives a power cut; unsynced data may
// not, and what comes back is a prefix.
func testCrashKeepsSynced(t *testing.T, h *harness) {
	h.needCrash()
	cfg := tinyConfig()
	s := h.open(cfg)
	var synced []string
	for i := 0; i < 50; i++ {
		b := fmt.Sprint("synced ", i, strings.Repeat("s", i))
		put(t, s, msg("cr", 0, b, "", ""))
		synced = append(synced, b)
	}
	dispatched(t, s)
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		put(t, s, msg("cr", 0, fmt.Sprint("unsynced ", i), "", ""))
	}
	dispatched(t, s)
	s = h.crash(s, cfg)
	r := s.Recovery()
	if !r.Abnormal {
		t.Fatalf("recovery after a power cut: %+v", r)
	}
	got := bodies(t, s, "cr", 0)
	if len(got) < len(synced) || !slices.Equal(got[:len(synced)], synced) {
		t.Fatalf("after crash: %d messages, want the %d synced first", len(got), len(synced))
	}
	for i, b := range got[len(synced):] {
		if b != fmt.Sprint("unsynced ", i) {
			t.Fatalf("after crash, message %d is %q", len(synced)+i, b)
		}
	}
	res := put(t, s, msg("cr", 0, "after", "", ""))
	if res.QueueOffset != int64(len(got)) || res.WroteOffset < r.CommitLogEnd {
		t.Fatalf("put after crash: %+v, recovery %+v", res, r)
	}
}

// testCrashSyncFlush: a SyncFlush put that returned is durable.
func testCrashSyncFlush(t *testing.T, h *harness) {
	h.needCrash()
	for _, manual := range []bool{true, false} {
		t.Run(fmt.Sprint("manual=", manual), func(t *testing.T) {
			h := &harness{t: t, b: h.b, fs: h.b.NewFS(t)}
			cfg := tinyConfig()
			hooks.EngineOf(&cfg).Manual = manual
			cfg.FlushDiskType = engine.SyncFlush
			s := h.open(cfg)
			var want []string
			for i := 0; i < 60; i++ {
				b := fmt.Sprint("durable ", i)
				put(t, s, msg("sf", int32(i%2), b, "", ""))
				if i%2 == 0 {
					want = append(want, b)
				}
			}
			// No dispatch flush, no checkpoint: recovery must replay.
			s = h.crash(s, cfg)
			if got := bodies(t, s, "sf", 0); !slices.Equal(got, want) {
				t.Fatalf("after crash: %v", got)
			}
			if s.MaxOffsetInQueue("sf", 1) != 30 {
				t.Fatalf("queue 1 max %d", s.MaxOffsetInQueue("sf", 1))
			}
		})
	}
}

// testCrashTwice: recovering twice gives the same files (P4).
func testCrashTwice(t *testing.T, h *harness) {
	h.needCrash()
	cfg := tinyConfig()
	s := h.open(cfg)
	for i := 0; i < 80; i++ {
		put(t, s, msg("c2", int32(i%2), fmt.Sprint("twice ", i), "", ""))
		if i == 40 {
			dispatched(t, s)
			mustFlush(t, s)
		}
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	s = h.crash(s, cfg)
	first := allFiles(t, h.fs, "consumequeue")
	cl := allFiles(t, h.fs, "commitlog")
	s = h.crash(s, cfg)
	if got := allFiles(t, h.fs, "consumequeue"); !maps.EqualFunc(first, got, bytes.Equal) {
		t.Fatal("a second recovery changed the consume queues")
	}
	if got := allFiles(t, h.fs, "commitlog"); !maps.EqualFunc(cl, got, bytes.Equal) {
		t.Fatal("a second recovery changed the commitlog")
	}
	if n := len(bodies(t, s, "c2", 0)) + len(bodies(t, s, "c2", 1)); n != 80 {
		t.Fatalf("%d messages after two recoveries, want 80", n)
	}
}

func testCloseIdempotent(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	put(t, s, msg("ci", 0, "x", "", ""))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := s.Put(context.Background(), msg("ci", 0, "y", "", "")); err != engine.ErrClosed {
		t.Fatalf("put after close: %v", err)
	}
	if _, err := s.GetMessage("ci", 0, 0, 1, nil); err != engine.ErrClosed {
		t.Fatalf("get after close: %v", err)
	}
	if err := s.FlushCommitLog(0); err != engine.ErrClosed {
		t.Fatalf("flush after close: %v", err)
	}
	if _, err := engineops.Of(s).Dispatch(); err != engine.ErrClosed {
		t.Fatalf("dispatch after close: %v", err)
	}
}

// testIdempotentRedispatch: dispatching the same range again changes no
// byte of any ConsumeQueue.
func testIdempotentRedispatch(t *testing.T, h *harness) {
	cfg := tinyConfig()
	s := h.open(cfg)
	var mid int64
	for i := 0; i < 120; i++ {
		res := put(t, s, msg("re", int32(i%3), fmt.Sprint("again ", i), []string{"A", "B"}[i%2], ""))
		if i == 60 {
			mid = res.WroteOffset
		}
	}
	dispatched(t, s)
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	before := allFiles(t, h.fs, "consumequeue")
	for _, from := range []int64{0, mid, 4096} {
		n, err := s.Redispatch(from)
		if err != nil {
			t.Fatalf("redispatch from %d: %v", from, err)
		}
		if n == 0 {
			t.Fatalf("redispatch from %d replayed nothing", from)
		}
		if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
			t.Fatal(err)
		}
		if after := allFiles(t, h.fs, "consumequeue"); !maps.EqualFunc(before, after, bytes.Equal) {
			t.Fatalf("redispatch from %d changed the consume queues", from)
		}
	}
	for q := int32(0); q < 3; q++ {
		if s.MaxOffsetInQueue("re", q) != 40 {
			t.Fatalf("queue %d max %d", q, s.MaxOffsetInQueue("re", q))
		}
	}
	// Abnormal recovery replays from the start; the queues stay the same.
	if h.b.Crash != nil {
		if err := s.FlushCommitLog(0); err != nil {
			t.Fatal(err)
		}
		s = h.crash(s, cfg)
		if s.Recovery().Redispatched == 0 {
			t.Fatalf("abnormal recovery replayed nothing: %+v", s.Recovery())
		}
		// Recovery rebuilt the units after its scan start in memory;
		// once synced they are the same bytes as before.
		if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
			t.Fatal(err)
		}
		if after := allFiles(t, h.fs, "consumequeue"); !maps.EqualFunc(before, after, bytes.Equal) {
			t.Fatal("recovery's replay changed the consume queues")
		}
	}
}

func testCheckpoint(t *testing.T, h *harness) {
	cfg := tinyConfig()
	s := h.open(cfg)
	var last engine.PutResult
	for i := 0; i < 30; i++ {
		last = put(t, s, msg("cp", 0, fmt.Sprint(i), "", ""))
	}
	dispatched(t, s)
	if p, l, _ := s.Checkpoint().Timestamps(); p != 0 || l != last.StoreTimestamp {
		t.Fatalf("before flush: physic %d logics %d, want 0 and %d", p, l, last.StoreTimestamp)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	p, l, i := s.Checkpoint().Timestamps()
	if p != last.StoreTimestamp || l != last.StoreTimestamp || i != 0 {
		t.Fatalf("checkpoint %d %d %d, want %d %d 0", p, l, i, last.StoreTimestamp, last.StoreTimestamp)
	}
	if got := s.Checkpoint().MinTimestamp(); got != last.StoreTimestamp-3000 {
		t.Fatalf("min timestamp %d", got)
	}
	b := fileBytes(t, h.fs, "checkpoint")
	if len(b) != 4096 {
		t.Fatalf("checkpoint is %d bytes", len(b))
	}
	for k, want := range []int64{p, l, i} {
		if got := int64(binary.BigEndian.Uint64(b[8*k:])); got != want {
			t.Fatalf("checkpoint long %d is %d, want %d", k, got, want)
		}
	}
	s.Checkpoint().SetIndex(baseTime + 7)
	last = put(t, s, msg("cp", 0, "closing", "", ""))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b = fileBytes(t, h.fs, "checkpoint")
	for k, want := range []int64{last.StoreTimestamp, last.StoreTimestamp, baseTime + 7} {
		if got := int64(binary.BigEndian.Uint64(b[8*k:])); got != want {
			t.Fatalf("after close, checkpoint long %d is %d, want %d", k, got, want)
		}
	}
	s = h.open(cfg)
	if p, l, i := s.Checkpoint().Timestamps(); p != last.StoreTimestamp || l != p || i != baseTime+7 || !s.Recovery().CheckpointValid {
		t.Fatalf("reopened checkpoint %d %d %d %+v", p, l, i, s.Recovery())
	}
}

// testFlushPositions: a full flush crosses CommitLog files.
func testFlushPositions(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	for i := 0; i < 100; i++ {
		put(t, s, msg("fp", 0, strings.Repeat("f", 200), "", ""))
	}
	if got := s.CommitLog().MaxOffset(); got < 3*4096 {
		t.Fatalf("test needs several files, max %d", got)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	q := s.CommitLog()
	if q.FlushedWhere() != q.MaxOffset() {
		t.Fatalf("flushed %d of %d", q.FlushedWhere(), q.MaxOffset())
	}
}

// testCloseUnderLoad closes the store while producers and consumers run:
// no panic, no race; every put that returned nil is there after reopen,
// and calls after Close fail with ErrClosed.
func testCloseUnderLoad(t *testing.T, h *harness) {
	for _, flush := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
		t.Run(flush.String(), func(t *testing.T) {
			h := &harness{t: t, b: h.b, fs: h.b.NewFS(t)}
			cfg := engine.Config{CommitLogFileSize: 16 << 10, ConsumeQueueUnits: 32, FlushDiskType: flush}
			s, err := engine.Open(h.fs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			const producers = 4
			acked := make(chan int64, producers)
			for p := 0; p < producers; p++ {
				go func() {
					n := int64(0)
					for {
						_, err := s.Put(context.Background(), msg("load", int32(p), fmt.Sprint(n), "", ""))
						if err != nil {
							if !errors.Is(err, engine.ErrClosed) {
								t.Errorf("put: %v", err)
							}
							acked <- n
							return
						}
						n++
					}
				}()
			}
			readers := make(chan struct{})
			for p := 0; p < producers; p++ {
				go func() {
					defer func() { readers <- struct{}{} }()
					for off := int64(0); ; {
						r, err := s.GetMessage("load", int32(p), off, 8, nil)
						if err != nil {
							return
						}
						for _, v := range r.Messages {
							if _, err := record.Decode(v.Record, v.CommitLogOffset, true); err != nil {
								t.Errorf("record at %d: %v", v.CommitLogOffset, err)
							}
						}
						off = max(off, r.NextBeginOffset)
						r.Release()
						runtime.Gosched()
					}
				}()
			}
			for s.CommitLog().MaxOffset() < 40<<10 {
				runtime.Gosched()
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want := make([]int64, 0, producers)
			for p := 0; p < producers; p++ {
				want = append(want, <-acked)
				<-readers
			}
			s = h.open(cfg)
			if s.Recovery().Abnormal {
				t.Fatalf("close under load was not clean: %+v", s.Recovery())
			}
			total, got := int64(0), int64(0)
			for p := 0; p < producers; p++ {
				total += want[p]
				got += s.MaxOffsetInQueue("load", int32(p))
			}
			if got != total {
				t.Fatalf("%d messages after reopen, %d acknowledged", got, total)
			}
		})
	}
}

// testCrashFromCheckpoint: with store times far apart, abnormal recovery
// starts at the file the checkpoint vouches for, not at file 0, and still
// rebuilds every unsynced unit after it.
func testCrashFromCheckpoint(t *testing.T, h *harness) {
	h.needCrash()
	cfg := tinyConfig()
	cfg.Clock = clockstest.NewStepping(time.UnixMilli(baseTime), 10*time.Second)
	s := h.open(cfg)
	var want [2][]string
	for i := 0; i < 100; i++ {
		b := fmt.Sprint("far apart ", i, strings.Repeat("f", 100))
		put(t, s, msg("cf", int32(i%2), b, "", ""))
		want[i%2] = append(want[i%2], b)
		if i == 70 {
			dispatched(t, s)
			if err := s.FlushCommitLog(0); err != nil {
				t.Fatal(err)
			}
			if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.FlushCommitLog(0); err != nil { // the CommitLog is durable, the last units are not
		t.Fatal(err)
	}
	s = h.crash(s, cfg)
	r := s.Recovery()
	if !r.Abnormal || !r.CheckpointValid || r.ScanFrom == 0 || r.Redispatched == 0 {
		t.Fatalf("recovery %+v: want a scan from a later file, with replay", r)
	}
	for q := int32(0); q < 2; q++ {
		if got := bodies(t, s, "cf", q); !slices.Equal(got, want[q]) {
			t.Fatalf("queue %d after crash: %d messages, want %d", q, len(got), len(want[q]))
		}
	}
}
