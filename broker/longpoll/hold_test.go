package longpoll_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/dispatch"

	"github.com/rocketstore/rocketstore/broker/longpoll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slack bounds how long a goroutine may take to report what it has
// already done (a failure guard only: timeouts run on a fake clock).
const slack = 10 * time.Second

type tagFilter int64

func (f tagFilter) IsMatchedByConsumeQueue(tagsCode int64) bool { return int64(f) == tagsCode }

type result struct {
	out longpoll.Outcome
	err error
}

// wait runs Wait in a goroutine and returns once the request is held.
func wait(t *testing.T, h *longpoll.Hold, ctx context.Context, pullFrom int64, f longpoll.Matcher, timeout time.Duration, max *atomic.Int64) <-chan result {
	t.Helper()
	n := h.Held()
	ch := make(chan result, 1)
	go func() {
		out, err := h.Wait(ctx, "T", 0, pullFrom, f, timeout, max.Load)
		ch <- result{out, err}
	}()
	wctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	if err := h.WaitHeld(wctx, n+1); err != nil {
		t.Fatalf("request not held: %v", err)
	}
	return ch
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(slack):
		t.Fatal("Wait did not return")
		return result{}
	}
}

func TestWokenByMatchingArrival(t *testing.T) {
	h := longpoll.New(true, nil)
	defer h.Close()
	var max atomic.Int64
	ch := wait(t, h, context.Background(), 0, tagFilter(7), time.Hour, &max)
	// Another queue, an offset not past pullFrom, another tag: not woken.
	// Notify is synchronous, so Held() right after it tells.
	h.NotifyMessageArriving([]byte("T"), 1, 1, 7)
	h.NotifyMessageArriving([]byte("U"), 0, 1, 7)
	h.NotifyMessageArriving([]byte("T"), 0, 0, 7)
	h.NotifyMessageArriving([]byte("T"), 0, 1, 8)
	if h.Held() != 1 {
		t.Fatal("woken by a non-matching arrival")
	}
	select {
	case r := <-ch:
		t.Fatalf("returned %v", r)
	default:
	}
	start := time.Now()
	max.Store(1)
	h.NotifyMessageArriving([]byte("T"), 0, 1, 7)
	if r := recv(t, ch); r.out != longpoll.Arrived || r.err != nil {
		t.Fatal(r)
	}
	if h.Held() != 0 {
		t.Fatal("still held")
	}
	t.Logf("woken in %v", time.Since(start))
}

func TestNilFilterMatchesAll(t *testing.T) {
	h := longpoll.New(true, nil)
	defer h.Close()
	var max atomic.Int64
	ch1 := wait(t, h, context.Background(), 3, nil, time.Hour, &max)
	ch2 := wait(t, h, context.Background(), 5, nil, time.Hour, &max)
	h.NotifyMessageArriving([]byte("T"), 0, 4, 123)
	if r := recv(t, ch1); r.out != longpoll.Arrived {
		t.Fatal(r)
	}
	if h.Held() != 1 {
		t.Fatal("the request at 5 was woken by offset 4")
	}
	h.NotifyMessageArriving([]byte("T"), 0, 6, 0)
	if r := recv(t, ch2); r.out != longpoll.Arrived {
		t.Fatal(r)
	}
}

// armed waits until the request's suspend timer is set on clk.
func armed(t *testing.T, clk *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("%d suspend timers not armed: %v", n, err)
	}
}

func TestTimeout(t *testing.T) {
	clk := clockwork.NewFakeClock()
	h := longpoll.New(true, clk)
	defer h.Close()
	var max atomic.Int64
	const timeout = 30 * time.Millisecond
	ch := wait(t, h, context.Background(), 0, nil, timeout, &max)
	armed(t, clk, 1)
	clk.Advance(timeout - time.Nanosecond)
	select {
	case r := <-ch:
		t.Fatalf("returned %v before the timeout passed", r)
	default:
	}
	clk.Advance(time.Nanosecond)
	if r := recv(t, ch); r.out != longpoll.TimedOut || r.err != nil {
		t.Fatal(r)
	}
	if h.Held() != 0 {
		t.Fatal("a timed-out request is still held")
	}
	// A zero or negative timeout returns at once, timed out.
	if out, _ := h.Wait(context.Background(), "T", 0, 0, nil, -1, max.Load); out != longpoll.TimedOut {
		t.Fatal(out)
	}
}

func TestContextCancel(t *testing.T) {
	h := longpoll.New(true, nil)
	defer h.Close()
	var max atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	ch := wait(t, h, ctx, 0, nil, time.Hour, &max)
	cancel()
	if r := recv(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatal(r)
	}
	if h.Held() != 0 {
		t.Fatal("a cancelled request is still held")
	}
}

func TestClose(t *testing.T) {
	h := longpoll.New(true, nil)
	var max atomic.Int64
	ch := wait(t, h, context.Background(), 0, nil, time.Hour, &max)
	h.Close()
	h.Close()
	if r := recv(t, ch); !errors.Is(r.err, longpoll.ErrClosed) {
		t.Fatal(r)
	}
	if _, err := h.Wait(context.Background(), "T", 0, 0, nil, time.Hour, max.Load); !errors.Is(err, longpoll.ErrClosed) {
		t.Fatal(err)
	}
	if err := h.WaitHeld(context.Background(), 5); !errors.Is(err, longpoll.ErrClosed) {
		t.Fatal(err)
	}
}

// TestNoLostWakeup provokes both halves of RocketMQ's #7358 race with the
// maxOffset callback, which Wait calls right after registering:
//   - the arrival was dispatched before registration (its notification
//     found nobody): the re-check sees the new max offset;
//   - the arrival is notified after registration, while the re-check reads
//     a stale max: the notification wakes the registered request.
func TestNoLostWakeup(t *testing.T) {
	h := longpoll.New(true, nil)
	defer h.Close()
	var max atomic.Int64
	// Before registration.
	h.NotifyMessageArriving([]byte("T"), 0, 1, 0) // nobody held yet
	max.Store(1)
	out, err := h.Wait(context.Background(), "T", 0, 0, nil, time.Hour, max.Load)
	if out != longpoll.Arrived || err != nil || h.Held() != 0 {
		t.Fatal(out, err, h.Held())
	}
	// Between registration and the re-check.
	stale := func() int64 {
		if h.Held() != 1 {
			t.Error("maxOffset called before the request was registered")
		}
		h.NotifyMessageArriving([]byte("T"), 0, 2, 0)
		return 1 // what the caller read before the arrival
	}
	done := make(chan longpoll.Outcome, 1)
	go func() { o, _ := h.Wait(context.Background(), "T", 0, 1, nil, time.Hour, stale); done <- o }()
	select {
	case o := <-done:
		if o != longpoll.Arrived {
			t.Fatal(o)
		}
	case <-time.After(slack):
		t.Fatal("wake-up lost")
	}
}

func TestDispatchHook(t *testing.T) {
	req := &dispatch.Request{Topic: []byte("T"), QueueID: 0, ConsumeQueueOffset: 0, TagsCode: 7}
	var max atomic.Int64
	// Short polling: Dispatch does not notify; the request ends by its
	// timeout.
	clk := clockwork.NewFakeClock()
	short := longpoll.New(false, clk)
	defer short.Close()
	ch := wait(t, short, context.Background(), 0, nil, 20*time.Millisecond, &max)
	armed(t, clk, 1)
	short.Dispatch(req)
	if short.Held() != 1 {
		t.Fatal("short polling woken by an arrival")
	}
	clk.Advance(20 * time.Millisecond)
	if r := recv(t, ch); r.out != longpoll.TimedOut {
		t.Fatal(r)
	}
	// Long polling: the unit at ConsumeQueueOffset 0 makes the max 1.
	long := longpoll.New(true, nil)
	defer long.Close()
	ch = wait(t, long, context.Background(), 0, tagFilter(7), time.Hour, &max)
	prepared := *req
	prepared.SysFlag = 0x4 // a prepared transaction record is not in a queue
	long.Dispatch(&prepared)
	if long.Held() != 1 {
		t.Fatal("woken by a prepared transaction record")
	}
	long.Dispatch(req)
	if r := recv(t, ch); r.out != longpoll.Arrived {
		t.Fatal(r)
	}
}
