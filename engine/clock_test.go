package engine_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
)

// storeTickers is how many tickers a running AsyncFlush store keeps on
// its clock: the CommitLog and ConsumeQueue flush services and the clean
// service.
const storeTickers = 3

var quiet = slog.New(slog.DiscardHandler)

// syncRecorder is a crash-simulating file system that reports the path
// of every file sync on the returned channel (dropping reports when it is
// full).
func syncRecorder(t *testing.T) (*crashsim.FS, <-chan string) {
	t.Helper()
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	syncs := make(chan string, 1024)
	fs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		if op.Kind == crashsim.OpSync {
			select {
			case syncs <- op.Path:
			default:
			}
		}
		return nil
	}))
	return fs, syncs
}

// waitSyncs returns once a file under each of dirs is synced, failing
// the test after a minute of wall time.
func waitSyncs(t *testing.T, syncs <-chan string, dirs ...string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for len(dirs) > 0 {
		select {
		case p := <-syncs:
			dirs = slices.DeleteFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d) })
		case <-deadline:
			t.Fatalf("no sync under %v", dirs)
		}
	}
}

// TestFlushServicesRunOnTheStoreClock: the CommitLog and ConsumeQueue
// flush services tick on Config.Clock. With hour-long intervals on a fake
// clock nothing is synced until the clock moves an hour; then both flush
// everything (the thorough interval passed too). On the wall clock's
// tickers nothing would be synced within the test.
func TestFlushServicesRunOnTheStoreClock(t *testing.T) {
	fs, syncs := syncRecorder(t)
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64, Logger: quiet,
		Clock: clock, FlushIntervalCommitLog: time.Hour, FlushCommitLogThoroughInterval: time.Hour,
		FlushIntervalConsumeQueue: time.Hour, FlushConsumeQueueThoroughInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var end int64
	for range 10 {
		res, err := s.Put(ctx, &engine.Message{Topic: "t", Body: []byte("flushed by the clock")})
		if err != nil {
			t.Fatal(err)
		}
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	if err := s.WaitDispatched(ctx, end); err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntilContext(ctx, storeTickers); err != nil {
		t.Fatal(err)
	}
	for len(syncs) > 0 { // whatever Open synced
		<-syncs
	}
	if got := s.CommitLog().FlushedWhere(); got >= end {
		t.Fatalf("CommitLog flushed to %d before the clock moved", got)
	}
	clock.Advance(time.Hour)
	waitSyncs(t, syncs, "commitlog/", "consumequeue/")
}

// TestDispatchRetryRunsOnTheStoreClock: a failed dispatch pass is retried
// after dispatch.DefaultRetryInterval of the store's clock, not before:
// the dispatcher waits on a timer of that clock, and once space is back
// the retry that clock fires catches up. On a wall-clock timer the
// dispatcher would not be one of the clock's waiters.
func TestDispatchRetryRunsOnTheStoreClock(t *testing.T) {
	fs, full := fullDisk(t, "consumequeue")
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64, Logger: quiet,
		Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full.Store(true)
	res, err := s.Put(ctx, &engine.Message{Topic: "NewTopic", Body: []byte("first")})
	if err != nil {
		t.Fatal(err)
	}
	// A failed pass parks the dispatcher on a retry timer of the clock;
	// Advance fires it (and takes it off the clock's waiters), so the
	// next park is the retry's failure.
	for failures := int64(1); failures <= 2; failures++ {
		if err := clock.BlockUntilContext(ctx, storeTickers+1); err != nil {
			t.Fatal(err)
		}
		if h := s.Health(); !h.DispatchFailing || h.DispatchErrors != failures {
			t.Fatalf("parked to retry after %d failed passes, yet health says %+v", failures, h)
		}
		clock.Advance(dispatch.DefaultRetryInterval - time.Millisecond)
		if h := s.Health(); h.DispatchErrors != failures {
			t.Fatalf("retried before the retry interval: %+v", h)
		}
		if failures == 2 {
			full.Store(false)
		}
		clock.Advance(time.Millisecond)
	}
	end := res.WroteOffset + int64(res.WroteBytes)
	waitUntil(t, "dispatch to resume", func() bool { return engineops.Of(s).ReputFromOffset() >= end })
}
