package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// unhurriedTopic is the topic of the records the tests put unhurried.
const unhurriedTopic = "rmq_sys_REVIVE_LOG_test"

// openUnhurried opens an AsyncFlush store on a fake clock whose
// CommitLog flush ticks every hour, with a dispatcher that reports the
// CommitLog offset of each record of unhurriedTopic it sees.
func openUnhurried(t *testing.T, broken bool) (*engine.Store, *clockwork.FakeClock, <-chan int64) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64, Logger: quiet, Clock: clock,
		FlushIntervalCommitLog: time.Hour, FlushCommitLogThoroughInterval: time.Hour,
		FlushIntervalConsumeQueue: time.Hour, FlushConsumeQueueThoroughInterval: time.Hour}
	hooks.EngineOf(&cfg).NoUnhurriedWakes = broken
	seen := make(chan int64, 64)
	s, err := engine.Open(memfs.New(nil), cfg, dispatch.DispatcherFunc(func(req *dispatch.Request) error {
		if string(req.Topic) == unhurriedTopic {
			seen <- req.CommitLogOffset
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clock, seen
}

// errNotDispatched: an unhurried record did not reach its ConsumeQueue.
var errNotDispatched = errors.New("unhurried record not dispatched")

// waitBound is how long of wall time a test waits for what must happen
// (the machine may be busy); brokenBound is how long a broken variant's
// run waits for what must not.
const waitBound, brokenBound = 30 * time.Second, time.Second

// bound is the wait of a run of the broken variant or not.
func bound(broken bool) time.Duration {
	if broken {
		return brokenBound
	}
	return waitBound
}

// dispatchedBy waits up to d of wall time for the report of the record
// at off.
func dispatchedBy(seen <-chan int64, off int64, d time.Duration) error {
	deadline := time.After(d)
	for {
		select {
		case got := <-seen:
			if got == off {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("%w: offset %d", errNotDispatched, off)
		}
	}
}

// flushRounds puts an unhurried record, moves the store's clock by one
// CommitLog flush interval and waits for the record's dispatch, ten
// times. A round whose put finds the dispatcher still awake (it looks
// at the log's end again before it sleeps) proves nothing; ten rounds
// make that every one of them does so out of the question.
func flushRounds(t *testing.T, broken bool) error {
	s, clock, seen := openUnhurried(t, broken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, storeTickers); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		res, err := s.PutUnhurried(ctx, &engine.Message{Topic: unhurriedTopic, Body: fmt.Appendf(nil, "record %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		if err := dispatchedBy(seen, res.WroteOffset, bound(broken)); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}

// TestUnhurriedPutDispatchedByTheNextFlush: a record of PutUnhurried,
// which does not wake the dispatcher, reaches its ConsumeQueue at the
// store's next CommitLog flush at the latest (the flush wakes the
// dispatcher when it is behind). The broken variant, without that wake,
// leaves it undispatched until a put that wakes.
func TestUnhurriedPutDispatchedByTheNextFlush(t *testing.T) {
	if err := flushRounds(t, false); err != nil {
		t.Fatal(err)
	}
	if err := flushRounds(t, true); !errors.Is(err, errNotDispatched) {
		t.Fatalf("broken variant (no wake at the flush): %v, want an undispatched record", err)
	}
}

// waitRounds puts unhurried records and waits for their dispatch with
// WaitDispatched, the clock never moving (no flush).
func waitRounds(t *testing.T, broken bool) error {
	s, _, _ := openUnhurried(t, broken)
	for i := range 10 {
		res, err := s.PutUnhurried(context.Background(), &engine.Message{Topic: unhurriedTopic,
			Body: fmt.Appendf(nil, "record %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound(broken))
		err = s.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes))
		cancel()
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}

// TestWaitDispatchedWakesForUnhurriedPuts: WaitDispatched returns once
// unhurried records are dispatched without waiting for a flush or a put
// (pop's replay waits for its revive log this way at every start). The
// broken variant waits in vain.
func TestWaitDispatchedWakesForUnhurriedPuts(t *testing.T) {
	if err := waitRounds(t, false); err != nil {
		t.Fatal(err)
	}
	if err := waitRounds(t, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("broken variant (no wake in WaitDispatched): %v, want a wait that times out", err)
	}
}

// TestPutDispatchesUnhurriedRecordsBeforeIt: a put that wakes the
// dispatcher has the unhurried records before it dispatched with it, in
// CommitLog order.
func TestPutDispatchesUnhurriedRecordsBeforeIt(t *testing.T) {
	s, _, seen := openUnhurried(t, true) // no other wake
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var offs []int64
	for i := range 3 {
		res, err := s.PutUnhurried(ctx, &engine.Message{Topic: unhurriedTopic, Body: fmt.Appendf(nil, "record %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, res.WroteOffset)
	}
	if _, err := s.Put(ctx, &engine.Message{Topic: "T", Body: []byte("wakes")}); err != nil {
		t.Fatal(err)
	}
	for _, off := range offs {
		if err := dispatchedBy(seen, off, waitBound); err != nil {
			t.Fatal(err)
		}
	}
}
