package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// flushLog records, per segment, the ReleasePages and Sync calls in order.
type flushLog struct {
	mu    sync.Mutex
	calls map[string][]string
	// releaseErr, when set, is what every ReleasePages returns (the
	// pages then stay mapped, as after a real failure).
	releaseErr error
}

func (l *flushLog) failReleases(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseErr = err
}

func (l *flushLog) add(name, call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[name] = append(l.calls[name], call)
}

func (l *flushLog) of(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, c := range l.calls {
		if strings.HasPrefix(name, prefix) {
			out = append(out, c...)
		}
	}
	return out
}

// releaseFS wraps the mmap FS so that every segment logs its releases
// and syncs, passing the other optional interfaces through.
func releaseFS(fs backend.FS, l *flushLog) backend.FS {
	return wrapFS{fs, func(name string, seg backend.Segment) backend.Segment { return releaseSeg{seg, name, l} }}
}

type releaseSeg struct {
	backend.Segment
	name string
	l    *flushLog
}

func (s releaseSeg) ReleasePages(off, n int64) error {
	s.l.add(s.name, fmt.Sprintf("release %d %d", off, off+n))
	s.l.mu.Lock()
	err := s.l.releaseErr
	s.l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("release %s [%d,%d): %w", s.name, off, off+n, err)
	}
	return s.Segment.(interface{ ReleasePages(off, n int64) error }).ReleasePages(off, n)
}

func (s releaseSeg) Sync(off, n int64) error {
	s.l.add(s.name, fmt.Sprintf("sync %d %d", off, off+n))
	return s.Segment.Sync(off, n)
}

func (s releaseSeg) Pwrite(pieces [][]byte, off int64) (int, error) {
	return s.Segment.(backend.Pwriter).Pwrite(pieces, off)
}

func (s releaseSeg) PrefaultWrite(off, n int64) error {
	return s.Segment.(backend.WritePrefaulter).PrefaultWrite(off, n)
}

func (s releaseSeg) PrefaultRead(off, n int64) error {
	return s.Segment.(backend.ReadPrefaulter).PrefaultRead(off, n)
}

func (s releaseSeg) ReadFile(p []byte, off int64) (int, error) {
	return s.Segment.(backend.FileReader).ReadFile(p, off)
}

func (s releaseSeg) Advise(advice int) error { return s.Segment.(mmap.Adviser).Advise(advice) }

// TestFlushReleasesWrittenPages: a flush of pages written through the
// mapping (the CommitLog under ASYNC_FLUSH, the ConsumeQueues) first drops
// their mapping, from the page holding the flushed position up to the
// write position (whose partial page the segment keeps), then syncs the
// same range; the CommitLog under SYNC_FLUSH, written with pwrite, is
// synced without. Every message reads back after the flushes, and again
// after a reopen.
func TestFlushReleasesWrittenPages(t *testing.T) {
	for _, flush := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
		t.Run(flush.String(), func(t *testing.T) {
			dir := t.TempDir()
			fs, err := mmap.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			l := &flushLog{calls: map[string][]string{}}
			cfg := engine.Config{CommitLogFileSize: 16 << 20, FlushDiskType: flush,
				FlushIntervalCommitLog: time.Hour, FlushIntervalConsumeQueue: time.Hour}
			s, err := engine.Open(releaseFS(fs, l), cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			body := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 1000+i) }
			const n = 300 // ≈ 380 KiB of CommitLog, 6,000 bytes of ConsumeQueue
			for round := range 2 {
				for i := round * n / 2; i < (round+1)*n/2; i++ {
					if _, err := s.Put(ctx, &engine.Message{Topic: "r", Body: []byte(body(i))}); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.WaitDispatched(ctx, s.CommitLog().MaxOffset()); err != nil {
					t.Fatal(err)
				}
				if err := s.FlushCommitLog(0); err != nil {
					t.Fatal(err)
				}
				if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
					t.Fatal(err)
				}
			}
			max := s.CommitLog().MaxOffset()
			cl := l.of("commitlog/")
			if flush == engine.SyncFlush {
				for _, c := range cl {
					if strings.HasPrefix(c, "release") {
						t.Fatalf("CommitLog written with pwrite had its pages released: %v", cl)
					}
				}
			} else {
				checkReleaseThenSync(t, "CommitLog", cl, max)
			}
			checkReleaseThenSync(t, "ConsumeQueue", l.of("consumequeue/"), n*20)
			readAllAcrossReopen(t, s, fs, cfg, n, body)
		})
	}
}

// TestPageReleaseFailureCountedAndLogged: a flush whose release of the
// written pages fails still syncs everything (the store stays writable,
// every message reads back after a reopen), and the failure is not
// silent: Health().PageReleaseErrors counts each one, and a WARN names the
// file, the range and the OS error, once per minute while the failures
// last (the store's clock), then says when releases work again.
func TestPageReleaseFailureCountedAndLogged(t *testing.T) {
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := &flushLog{calls: map[string][]string{}}
	logs := &syncBuffer{}
	clock := clockwork.NewFakeClockAt(time.Now())
	cfg := engine.Config{CommitLogFileSize: 16 << 20, FlushIntervalCommitLog: time.Hour,
		FlushIntervalConsumeQueue: time.Hour, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	s, err := engine.Open(releaseFS(fs, l), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 1000+i) }
	const n = 90
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := s.Put(ctx, &engine.Message{Topic: "r", Body: []byte(body(i))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.WaitDispatched(ctx, s.CommitLog().MaxOffset()); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() {
		t.Helper()
		if err := s.FlushCommitLog(0); err != nil {
			t.Fatal(err)
		}
		if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
			t.Fatal(err)
		}
	}
	const msg = "releasing the mapping of written pages failed"
	l.failReleases(syscall.EINVAL)
	put(0, n/3)
	flush()
	h := s.Health()
	if h.PageReleaseErrors != 2 || !h.Writable {
		t.Fatalf("after a flush of the CommitLog and one ConsumeQueue whose releases failed: %d page release errors, writable %v (%v); want 2, writable",
			h.PageReleaseErrors, h.Writable, h.Reason)
	}
	if s.CommitLog().FlushedWhere() != s.CommitLog().MaxOffset() {
		t.Fatalf("flushed to %d of %d: a failed release stopped the sync", s.CommitLog().FlushedWhere(), s.CommitLog().MaxOffset())
	}
	if got := logs.count(msg); got != 1 {
		t.Fatalf("%d logs of the failure, want 1 (rate-limited):\n%s", got, logs.b.String())
	}
	for _, want := range []string{"level=WARN", "file=commitlog/00000000000000000000", "from=0", "invalid argument"} {
		if logs.count(want) == 0 {
			t.Errorf("the failure's log does not say %q:\n%s", want, logs.b.String())
		}
	}
	// Repeats within the minute are counted, not logged; past it, logged.
	put(n/3, 2*n/3)
	flush()
	if h := s.Health(); h.PageReleaseErrors != 4 || logs.count(msg) != 1 {
		t.Fatalf("second failing round: %d errors, %d logs; want 4, 1", h.PageReleaseErrors, logs.count(msg))
	}
	clock.Advance(time.Minute)
	put(2*n/3, n-1)
	flush()
	if h := s.Health(); h.PageReleaseErrors != 6 || logs.count(msg) != 2 || logs.count("failures=5") != 1 {
		t.Fatalf("failing round a minute later: %d errors, %d logs; want 6, 2 (the second saying failures=5):\n%s",
			h.PageReleaseErrors, logs.count(msg), logs.b.String())
	}
	l.failReleases(nil)
	put(n-1, n)
	flush()
	if h := s.Health(); h.PageReleaseErrors != 6 || logs.count("releasing the mapping of written pages works again") != 1 {
		t.Fatalf("after releases work again: %d errors (want 6 still), logs:\n%s", h.PageReleaseErrors, logs.b.String())
	}
	readAllAcrossReopen(t, s, fs, cfg, n, body)
}

// checkReleaseThenSync checks that each sync of calls that moved the
// flushed position was preceded by a release from the page of its start
// to its end, and that the last sync ends at end.
func checkReleaseThenSync(t *testing.T, what string, calls []string, end int64) {
	t.Helper()
	var last string
	releases := 0
	for i, c := range calls {
		var from, to int64
		if _, err := fmt.Sscanf(c, "sync %d %d", &from, &to); err != nil || to == from {
			continue
		}
		last = c
		want := fmt.Sprintf("release %d %d", from&^4095, to)
		if i == 0 || calls[i-1] != want {
			t.Errorf("%s: %q not preceded by %q: %v", what, c, want, calls)
		}
		releases++
	}
	if releases < 2 || !strings.HasSuffix(last, fmt.Sprintf(" %d", end)) {
		t.Errorf("%s: %d released syncs, last %q, want ≥ 2 ending at %d: %v", what, releases, last, end, calls)
	}
}

// readAllAcrossReopen reads the n messages back from s, closes it, opens
// fs again (without the test's wrapper) and reads them all once more.
func readAllAcrossReopen(t *testing.T, s *engine.Store, fs backend.FS, cfg engine.Config, n int, body func(int) string) {
	t.Helper()
	readAll(t, s, n, body)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readAll(t, s, n, body)
}

func readAll(t *testing.T, s *engine.Store, n int, body func(int) string) {
	t.Helper()
	for i := 0; i < n; {
		r, err := s.GetMessage("r", 0, int64(i), n-i, nil)
		if err != nil || len(r.Messages) == 0 {
			t.Fatalf("get from %d: %d messages, %v", i, len(r.Messages), err)
		}
		for _, v := range r.Messages {
			m, err := record.Decode(v.Record, v.CommitLogOffset, true)
			if err != nil || string(m.Body) != body(i) {
				r.Release()
				t.Fatalf("message %d: %d body bytes, %v", i, len(m.Body), err)
			}
			i++
		}
		r.Release()
	}
}
