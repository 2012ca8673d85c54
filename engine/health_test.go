package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) count(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Count(w.b.String(), s)
}

// fullDisk returns a crashsim FS whose Create calls under dir fail with
// ENOSPC while the returned flag is set.
func fullDisk(t *testing.T, dir string) (*crashsim.FS, *atomic.Bool) {
	t.Helper()
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	under := crashsim.UnderPath(dir)
	fs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		if full.Load() && op.Kind == crashsim.OpCreate && under(op) {
			return crashsim.ErrNoSpace
		}
		return nil
	}))
	return fs, &full
}

// waitUntil polls cond with a deadline. The tests that use it run the
// store on the wall clock, where the dispatcher retries a failed pass
// after dispatch.DefaultRetryInterval and reports only through Health, so
// they poll what it exposes; TestDispatchRetryRunsOnTheStoreClock drives
// the retry on a fake clock instead.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDispatchFailureRefusesPutsAndResumes: a ConsumeQueue that cannot be created (full disk) must not leave the store
// acknowledging messages nobody can consume, silently. Puts are refused
// with ErrReadOnly (SERVICE_NOT_AVAILABLE), one ERROR is logged, and once
// space is back the dispatcher catches up and puts are accepted again.
func TestDispatchFailureRefusesPutsAndResumes(t *testing.T) {
	fs, full := fullDisk(t, "consumequeue")
	logs := &syncBuffer{}
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	full.Store(true)
	res, err := s.Put(ctx, &engine.Message{Topic: "NewTopic", Body: []byte("first")})
	if err != nil {
		t.Fatalf("first put (before the dispatcher fails): %v", err)
	}
	waitUntil(t, "the dispatch-failing flag", func() bool { return s.Health().DispatchFailing })
	for range 20 {
		_, err = s.Put(ctx, &engine.Message{Topic: "NewTopic", Body: []byte("refused")})
		if !errors.Is(err, engine.ErrReadOnly) || !errors.Is(err, engine.ErrDispatchFailing) {
			t.Fatalf("put while dispatch fails: err = %v, want ErrReadOnly and ErrDispatchFailing", err)
		}
	}
	if h := s.Health(); h.Writable || h.DispatchErrors == 0 || !h.DiskFull || h.DiskFullErrors == 0 {
		t.Fatalf("health while failing for lack of space: %+v (want not writable, disk full, both counters up)", h)
	}
	failures := s.Health().DispatchErrors
	waitUntil(t, "a retry of the dispatch", func() bool { return s.Health().DispatchErrors > failures })
	if n := logs.count("level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines while dispatch fails, want exactly 1:\n%s", n, logs.b.String())
	}
	full.Store(false)
	if err := s.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes)); err != nil {
		// The wait may see the last failure; the retry must still come.
		waitUntil(t, "dispatch to resume", func() bool { return engineops.Of(s).ReputFromOffset() >= res.WroteOffset+int64(res.WroteBytes) })
	}
	waitUntil(t, "the store to accept puts", func() bool { return s.Health().Writable })
	if _, err := s.Put(ctx, &engine.Message{Topic: "NewTopic", Body: []byte("after")}); err != nil {
		t.Fatalf("put after space was freed: %v", err)
	}
	if h := s.Health(); h.DiskFull {
		t.Fatalf("still disk full after dispatch resumed: %+v", h)
	}
	got, err := s.GetMessage("NewTopic", 0, 0, 32, nil)
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("the acknowledged message is not consumable after resumption: %v %+v", err, got)
	}
	got.Release()
	if logs.count("dispatch resumed") != 1 {
		t.Fatalf("no resumption logged:\n%s", logs.b.String())
	}
}

// TestCommitLogDiskFullResumes: a new CommitLog file that cannot be created refuses puts with ErrDiskFull
// (wrapping ErrReadOnly and ENOSPC) until space is freed, then puts are
// accepted again without a restart; the fault is logged once.
func TestCommitLogDiskFullResumes(t *testing.T) {
	fs, full := fullDisk(t, "commitlog")
	logs := &syncBuffer{}
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	full.Store(true)
	body := bytes.Repeat([]byte("x"), 500)
	var refused error
	for i := 0; i < 40 && refused == nil; i++ {
		_, refused = s.Put(ctx, &engine.Message{Topic: "t", Body: body})
	}
	if !errors.Is(refused, engine.ErrDiskFull) || !errors.Is(refused, engine.ErrReadOnly) || !errors.Is(refused, crashsim.ErrNoSpace) {
		t.Fatalf("put on a full disk: err = %v, want ErrDiskFull, ErrReadOnly and ENOSPC", refused)
	}
	for range 50 {
		if _, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body}); !errors.Is(err, engine.ErrDiskFull) {
			t.Fatalf("put while the disk is full: %v", err)
		}
	}
	if n := logs.count("level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines for one disk-full episode, want 1:\n%s", n, logs.b.String())
	}
	full.Store(false)
	waitUntil(t, "a put to succeed after space was freed", func() bool {
		_, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body})
		return err == nil
	})
	if h := s.Health(); !h.Writable || h.DiskFull || h.DiskFullErrors == 0 {
		t.Fatalf("health after resumption: %+v", h)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after a disk-full episode: %v", err)
	}
}

// TestRecoveryReportLogsAsKeyValues: the report is
// logged as key=value pairs, not as a raw Go struct.
func TestRecoveryReportLogsAsKeyValues(t *testing.T) {
	var b bytes.Buffer
	r := engine.RecoveryReport{Abnormal: true, CommitLogEnd: 42, Damaged: []engine.DamagedRange{{Offset: 1, End: 2}}}
	slog.New(slog.NewTextHandler(&b, nil)).Info("opened", "recovery", r)
	l := b.String()
	for _, want := range []string{"recovery.abnormal=true", "recovery.commitLogEnd=42", "recovery.damagedRecords=1"} {
		if !strings.Contains(l, want) {
			t.Errorf("log line %q lacks %q", l, want)
		}
	}
	if strings.Contains(l, "{") {
		t.Errorf("log line %q holds a Go struct", l)
	}
}

// The disk-full retry window follows the store's clock (Config.Clock), not
// the wall clock: with the clock stepped past DiskFullRetryInterval the
// next put tries again at once, and before that no put touches the disk.
// Failed while the window was measured with time.Now.
func TestDiskFullRetryFollowsConfigClock(t *testing.T) {
	s, fs, full, clock := fillDisk(t, io.Discard)
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 500)
	full.Store(false)
	creates := fs.Count(crashsim.OpCreate)
	clock.Advance(engine.DiskFullRetryInterval - time.Millisecond)
	if _, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body}); !errors.Is(err, engine.ErrDiskFull) {
		t.Fatalf("put within the retry window: %v, want ErrDiskFull", err)
	}
	if n := fs.Count(crashsim.OpCreate); n != creates {
		t.Fatalf("a put within the retry window tried to create %d files", n-creates)
	}
	clock.Advance(time.Millisecond)
	if _, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body}); err != nil {
		t.Fatalf("put once the store clock passed the retry window: %v", err)
	}
	if h := s.Health(); !h.Writable || h.DiskFull {
		t.Fatalf("health after the retry: %+v", h)
	}
}

// A persisting fault is logged at ERROR when it starts and again at most
// once a minute of the store's clock (Config.Clock), and its end says how
// long it lasted by that clock. Failed while faultLog read time.Now: the
// stepped clock's second failure, two minutes on, was not logged.
func TestFaultLogFollowsConfigClock(t *testing.T) {
	logs := &syncBuffer{}
	s, _, full, clock := fillDisk(t, logs)
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 500)
	clock.Advance(2 * time.Minute)
	if _, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body}); !errors.Is(err, engine.ErrDiskFull) {
		t.Fatalf("put two minutes later, disk still full: %v, want ErrDiskFull", err)
	}
	if n := logs.count("level=ERROR"); n != 2 || logs.count("failingFor=2m0s") != 1 {
		t.Fatalf("%d ERROR lines, want 2, the second failing for 2m0s by the store clock:\n%s", n, logs.b.String())
	}
	full.Store(false)
	clock.Advance(time.Minute)
	if _, err := s.Put(ctx, &engine.Message{Topic: "t", Body: body}); err != nil {
		t.Fatalf("put once space is back: %v", err)
	}
	if logs.count("failedFor=3m0s") != 1 {
		t.Fatalf("the resumption does not say the fault lasted 3m0s by the store clock:\n%s", logs.b.String())
	}
}

// fillDisk opens a manual-mode store on the stepped clock it returns and
// puts 500-byte bodies until a new CommitLog file cannot be created for
// lack of space (ErrDiskFull); the disk stays full until full is cleared.
func fillDisk(t *testing.T, logTo io.Writer) (*engine.Store, *crashsim.FS, *atomic.Bool, *clockwork.FakeClock) {
	t.Helper()
	fs, full := fullDisk(t, "commitlog")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64,
		Clock: clock, Logger: slog.New(slog.NewTextHandler(logTo, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	body := bytes.Repeat([]byte("x"), 500)
	full.Store(true)
	var refused error
	for i := 0; i < 40 && refused == nil; i++ {
		_, refused = s.Put(context.Background(), &engine.Message{Topic: "t", Body: body})
	}
	if !errors.Is(refused, engine.ErrDiskFull) {
		t.Fatalf("put on a full disk: %v, want ErrDiskFull", refused)
	}
	return s, fs, full, clock
}
