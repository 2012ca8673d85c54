// Package enginetest is the contract test suite of the store engine: the
// same behaviour, checked over every file backend.
//
// Each backend's test calls Run:
//
//	func TestEngineContract(t *testing.T) {
//		enginetest.Run(t, enginetest.Backend{
//			Name:  "memfs",
//			NewFS: func(t *testing.T) backend.FS { return memfs.New(nil) },
//			Crash: func(t *testing.T, fs backend.FS) backend.FS {
//				return memfs.New(fs.(*memfs.FS).Afero())
//			},
//		})
//	}
//
// The suite covers put/get round trips, file rolling with BLANK records,
// pre-blank fill, the GetMessage statuses and transfer limits, tag
// filtering, restarts (clean, and after a power cut where the backend can
// model one), idempotent re-dispatch, the checkpoint, the on-disk format
// (decoded here independently of the writer, from the spec's byte tables),
// damaged stores and RocketMQ-written fixtures.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/record"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// Backend makes the file systems the suite runs on.
type Backend struct {
	Name string
	// NewFS returns a new, empty FS.
	NewFS func(t *testing.T) backend.FS
	// Reopen returns an FS on the same files after every store on fs was
	// closed (a new process). Nil reuses fs.
	Reopen func(t *testing.T, fs backend.FS) backend.FS
	// Crash returns an FS holding exactly what was synced on fs (a power
	// cut). Nil when the backend cannot model one; those tests are skipped.
	Crash func(t *testing.T, fs backend.FS) backend.FS
}

type test struct {
	name string
	fn   func(t *testing.T, h *harness)
}

// Run runs the suite over b.
func Run(t *testing.T, b Backend) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"RoundTrip", roundTripTests},
		{"Rolling", rollingTests},
		{"Status", statusTests},
		{"Filter", filterTests},
		{"Restart", restartTests},
		{"Dispatch", dispatchTests},
		{"Format", formatTests},
		{"BadInput", badInputTests},
		{"Fixtures", fixtureTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.fn(t, &harness{t: t, b: b, fs: b.NewFS(t)})
				})
			}
		})
	}
}

// harness is one test's store location.
type harness struct {
	t  *testing.T
	b  Backend
	fs backend.FS
}

// baseTime is the clock's start: 2023-11-14T22:13:20Z.
const baseTime = 1_700_000_000_000

// clock returns a clock that advances one millisecond per read.
func clock() *clockstest.Stepping {
	return clockstest.NewStepping(time.UnixMilli(baseTime), time.Millisecond)
}

// tinyConfig is a deterministic store with tiny files: no goroutines,
// 4 KiB CommitLog files, 8-unit ConsumeQueue files.
func tinyConfig() engine.Config {
	return hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 8, Clock: clock()})
}

// open opens the store on h.fs and registers a Close at cleanup.
func (h *harness) open(cfg engine.Config) *engine.Store {
	h.t.Helper()
	s, err := engine.Open(h.fs, cfg)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.t.Cleanup(func() { _ = s.Close() }) // the test may have closed or crashed it
	return s
}

// reopen closes s and opens the store again from the same files.
func (h *harness) reopen(s *engine.Store, cfg engine.Config) *engine.Store {
	h.t.Helper()
	if err := s.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	if h.b.Reopen != nil {
		h.fs = h.b.Reopen(h.t, h.fs)
	}
	return h.open(cfg)
}

// crash abandons s and opens what was synced; it skips the test when the
// backend cannot model a power cut.
func (h *harness) crash(s *engine.Store, cfg engine.Config) *engine.Store {
	h.t.Helper()
	engineops.Of(s).Abandon()
	h.fs = h.b.Crash(h.t, h.fs)
	return h.open(cfg)
}

func (h *harness) needCrash() {
	if h.b.Crash == nil {
		h.t.Skipf("backend %s cannot model a power cut", h.b.Name)
	}
}

// put stores m or fails the test.
func put(t *testing.T, s *engine.Store, m *engine.Message) engine.PutResult {
	t.Helper()
	r, err := s.Put(context.Background(), m)
	if err != nil {
		t.Fatalf("put %s/%d: %v", m.Topic, m.QueueID, err)
	}
	return r
}

// dispatched waits until everything put is in the ConsumeQueues.
func dispatched(t *testing.T, s *engine.Store) {
	t.Helper()
	if err := s.WaitDispatched(context.Background(), s.CommitLog().MaxOffset()); err != nil {
		t.Fatalf("wait dispatched: %v", err)
	}
}

// closeStore closes s and fails the test if Close fails.
func closeStore(t *testing.T, s *engine.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// mustFlush flushes the CommitLog and the ConsumeQueues.
func mustFlush(t *testing.T, s *engine.Store) {
	t.Helper()
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatalf("flush commitlog: %v", err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatalf("flush consume queues: %v", err)
	}
}

// msg builds a message with tags and keys.
func msg(topic string, qid int32, body, tags, keys string) *engine.Message {
	m := &engine.Message{Topic: topic, QueueID: qid, Body: []byte(body), Properties: map[string]string{}}
	if tags != "" {
		m.Properties["TAGS"] = tags
	}
	if keys != "" {
		m.Properties["KEYS"] = keys
	}
	return m
}

// get runs GetMessage, copies what it found and releases the result.
type got struct {
	status  engine.GetMessageStatus
	next    int64
	min     int64
	max     int64
	msgs    []*engine.MessageExt
	offsets []int64
}

func get(t *testing.T, s *engine.Store, topic string, qid int32, off int64, max int, f record.MessageFilter) got {
	t.Helper()
	r, err := s.GetMessage(topic, qid, off, max, f)
	if err != nil {
		t.Fatalf("get %s/%d@%d: %v", topic, qid, off, err)
	}
	defer r.Release()
	g := got{status: r.Status, next: r.NextBeginOffset, min: r.MinOffset, max: r.MaxOffset}
	total := 0
	for _, v := range r.Messages {
		m, err := engineDecode(v.Record)
		if err != nil {
			t.Fatalf("decode record at %d: %v", v.CommitLogOffset, err)
		}
		if m.CommitLogOffset != v.CommitLogOffset || m.QueueOffset != v.QueueOffset {
			t.Fatalf("view says %d/%d, record says %d/%d", v.CommitLogOffset, v.QueueOffset, m.CommitLogOffset, m.QueueOffset)
		}
		g.msgs = append(g.msgs, m)
		g.offsets = append(g.offsets, v.QueueOffset)
		total += len(v.Record)
	}
	if total != r.BufferTotalSize {
		t.Fatalf("BufferTotalSize %d, records add up to %d", r.BufferTotalSize, total)
	}
	return g
}

func (g got) String() string {
	return fmt.Sprintf("%v next=%d min=%d max=%d n=%d", g.status, g.next, g.min, g.max, len(g.msgs))
}

// wantStatus checks status and next begin offset.
func wantStatus(t *testing.T, g got, status engine.GetMessageStatus, next int64) {
	t.Helper()
	if g.status != status || g.next != next {
		t.Fatalf("got %v, want %v next=%d", g, status, next)
	}
}

// fileBytes returns a copy of a file's bytes as the store's FS sees them.
func fileBytes(t *testing.T, fs backend.FS, name string) []byte {
	t.Helper()
	seg, err := fs.Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer seg.Close()
	return append([]byte(nil), seg.View(0, seg.Size())...)
}

// writeFile creates (or replaces) a file with content and syncs it.
func writeFile(t *testing.T, fs backend.FS, name string, content []byte) {
	t.Helper()
	if err := fs.Remove(name); err != nil && !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("remove %s: %v", name, err)
	}
	if err := fs.MkdirAll(filepath.ToSlash(filepath.Dir(name))); err != nil {
		t.Fatal(err)
	}
	seg, err := fs.Create(name, int64(len(content)))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if _, err := seg.WriteAt(content, 0); err != nil {
		t.Fatal(err)
	}
	if err := seg.Sync(0, int64(len(content))); err != nil {
		t.Fatal(err)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
}

// patchFile overwrites bytes of an existing file at off and syncs them.
func patchFile(t *testing.T, fs backend.FS, name string, off int64, p []byte) {
	t.Helper()
	seg, err := fs.Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer seg.Close()
	if _, err := seg.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
	if err := seg.Sync(off, int64(len(p))); err != nil {
		t.Fatal(err)
	}
}

// allFiles returns every file below dir (recursively) with its bytes.
func allFiles(t *testing.T, fs backend.FS, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var walk func(d string)
	walk = func(d string) {
		names, err := fs.List(d)
		if err != nil {
			return
		}
		for _, n := range names {
			p := d + "/" + n
			out[p] = fileBytes(t, fs, p)
		}
		dirs, _ := fs.ListDirs(d)
		for _, sub := range dirs {
			walk(d + "/" + sub)
		}
	}
	walk(dir)
	return out
}

var (
	v4Host = netip.MustParseAddrPort("192.168.1.20:50123")
	v6Host = netip.MustParseAddrPort("[2001:db8::7]:10911")
)
