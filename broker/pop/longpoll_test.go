package pop

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestLongPollWokenByArrival: a receive with a poll time waits for a
// message and returns as soon as one is dispatched, long before its
// poll time.
func TestLongPollWokenByArrival(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	start := time.Now()
	got := e.receiveAsync(ReceiveRequest{Group: testGroup, Topic: testTopic,
		QueueID: AllQueues, Max: 1, InvisibleTime: time.Second, PollTime: time.Minute})
	e.send(0, "a", "")
	r := <-got
	if r.err != nil || !slices.Equal(keysOf(r.ms), []string{"a"}) {
		t.Fatalf("long poll: %v, %v", keysOf(r.ms), r.err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("long poll returned after %v: not woken by the arrival", d)
	}
}

// TestLongPollTimesOut: with nothing to receive, the receive returns
// empty once the service's clock has passed its poll time, not before.
func TestLongPollTimesOut(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	got := e.receiveAsync(ReceiveRequest{Group: testGroup, Topic: testTopic,
		QueueID: 0, Max: 1, InvisibleTime: time.Second, PollTime: 20 * time.Millisecond})
	ctx, cancelWait := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWait()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil { // the poll-time timer
		t.Fatal(err)
	}
	e.clock.Advance(19 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("returned %v, %v before its poll time", keysOf(r.ms), r.err)
	default:
	}
	e.clock.Advance(time.Millisecond)
	if r := <-got; r.err != nil || len(r.ms) != 0 {
		t.Fatalf("empty long poll: %v, %v", keysOf(r.ms), r.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.svc.Receive(ctx, ReceiveRequest{Group: testGroup, Topic: testTopic, QueueID: 0, Max: 1,
		InvisibleTime: time.Second, PollTime: time.Minute}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled long poll: %v", err)
	}
}

func TestForwardToDeadLetter(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.send(0, "a", "")
	ms := e.receive(0, 1, time.Minute, false)
	if err := e.svc.ForwardToDeadLetter(context.Background(), testGroup, testTopic, ms[0].Handle.String()); err != nil {
		t.Fatal(err)
	}
	if got := e.dlqKeys(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("DLQ holds %v", got)
	}
	if err := e.ack(ms[0]); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("ack after the forward: %v", err)
	}
	e.powerCut()
	e.advance(time.Hour)
	if got := e.receive(0, 1, time.Minute, false); len(got) != 0 {
		t.Fatalf("forwarded message received again: %v", keysOf(got))
	}
}

// fakeTimers are long-polling timers that fire only when the test says:
// a receive woken while none fired was woken by something else.
type fakeTimers struct {
	started chan fakeTimer // each timer as it starts
}

// fakeTimer is one started timer: its duration, and its channel, which
// the test sends on to fire it.
type fakeTimer struct {
	d    time.Duration
	fire chan time.Time
}

func newFakeTimers() *fakeTimers { return &fakeTimers{started: make(chan fakeTimer, 16)} }

func (f *fakeTimers) start(d time.Duration) (<-chan time.Time, func() bool) {
	ft := fakeTimer{d: d, fire: make(chan time.Time, 1)}
	f.started <- ft
	return ft.fire, func() bool { return true }
}

// newTimedEnv is newEnv with fake long-polling timers.
func newTimedEnv(t *testing.T) (*env, *fakeTimers) {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(hooks.Pop{}, DefaultMaxDeliveryAttempts)
	ft := newFakeTimers()
	e.cfg.timer = ft.start
	e.open()
	t.Cleanup(e.close)
	return e, ft
}

// TestLongPollWakesOnArrivalNotByPolling: a receive waiting in its long
// poll (its poll-time timer and the timer of an in-flight message's
// invisible time started, neither ever fires) returns the message that
// arrives; a receive that polled on a timer would wait forever. The
// invisible-time timer follows the injected clock.
func TestLongPollWakesOnArrivalNotByPolling(t *testing.T) {
	e, ft := newTimedEnv(t)
	e.send(0, "a", "")
	if got := e.receive(AllQueues, 1, time.Minute, false); !slices.Equal(keysOf(got), []string{"a"}) {
		t.Fatalf("first receive: %v", keysOf(got))
	}
	e.advance(20 * time.Second)
	got := e.receiveAsync(ReceiveRequest{Group: testGroup, Topic: testTopic,
		QueueID: AllQueues, Max: 1, InvisibleTime: time.Minute, PollTime: time.Hour})
	if tm := <-ft.started; tm.d != time.Hour {
		t.Fatalf("poll-time timer of %v, want 1h", tm.d)
	}
	// The second timer starts after the receive looked and found nothing:
	// it is waiting now.
	if tm := <-ft.started; tm.d != 40*time.Second {
		t.Fatalf("invisible-time timer of %v, want the 40s left of a's invisible time", tm.d)
	}
	e.send(0, "b", "")
	var r receiveResult
	select {
	case r = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the arrival did not wake the waiting receive")
	}
	if r.err != nil || !slices.Equal(keysOf(r.ms), []string{"b"}) {
		t.Fatalf("woken receive: %v, %v", keysOf(r.ms), r.err)
	}
	e.dispatch()
}

// TestLongPollWakesAtInvisibleTimeEnd: a waiting receive whose group has
// a message in flight is woken when that message's invisible time ends
// and gets it, its attempt counted.
func TestLongPollWakesAtInvisibleTimeEnd(t *testing.T) {
	e, ft := newTimedEnv(t)
	e.send(0, "a", "")
	e.receive(AllQueues, 1, time.Minute, false)
	got := make(chan []Message, 1)
	go func() {
		ms, err := e.svc.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic,
			QueueID: AllQueues, Max: 1, InvisibleTime: time.Minute, PollTime: time.Hour})
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	<-ft.started // the poll time's
	visible := <-ft.started
	e.advance(time.Minute)
	visible.fire <- time.UnixMilli(e.ms())
	var ms []Message
	select {
	case ms = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the end of the invisible time did not wake the waiting receive")
	}
	if !slices.Equal(keysOf(ms), []string{"a"}) || ms[0].Attempt != 2 {
		t.Fatalf("receive after the invisible time: %v (attempt %v)", keysOf(ms), ms)
	}
	e.dispatch()
}

// TestLongPollWakesOnShortenedInvisibleTime: a receive waiting on an
// in-flight message's invisible time is woken when that time is
// shortened (a consumer's nack), not at the old end, and gets the
// message.
func TestLongPollWakesOnShortenedInvisibleTime(t *testing.T) {
	e, ft := newTimedEnv(t)
	e.send(0, "a", "")
	ms := e.receive(AllQueues, 1, time.Hour, false)
	got := make(chan []Message, 1)
	go func() {
		ms, err := e.svc.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic,
			QueueID: AllQueues, Max: 1, InvisibleTime: time.Minute, PollTime: time.Hour})
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	<-ft.started // the poll time's
	if tm := <-ft.started; tm.d != time.Hour {
		t.Fatalf("invisible-time timer of %v, want 1h", tm.d)
	}
	if _, err := e.svc.ChangeInvisibleDuration(context.Background(), testGroup, testTopic, ms[0].Handle.String(), 0); err != nil {
		t.Fatal(err)
	}
	var again []Message
	select {
	case again = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the shortened invisible time did not wake the waiting receive")
	}
	if !slices.Equal(keysOf(again), []string{"a"}) || again[0].Attempt != 2 {
		t.Fatalf("woken receive: %v", keysOf(again))
	}
	e.dispatch()
}

// receiveResult is what a Receive started by receiveAsync returned.
type receiveResult struct {
	ms  []Message
	err error
}

// receiveAsync starts a Receive of req in its own goroutine; its result
// arrives on the returned channel.
func (e *env) receiveAsync(req ReceiveRequest) <-chan receiveResult {
	got := make(chan receiveResult, 1)
	go func() {
		ms, err := e.svc.Receive(context.Background(), req)
		got <- receiveResult{ms, err}
	}()
	return got
}
