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
	type result struct {
		ms  []Message
		err error
	}
	got := make(chan result, 1)
	start := time.Now()
	go func() {
		ms, err := e.svc.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic,
			QueueID: AllQueues, Max: 1, InvisibleTime: time.Second, PollTime: time.Minute})
		got <- result{ms, err}
	}()
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
// empty after its poll time.
func TestLongPollTimesOut(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	start := time.Now()
	ms, err := e.svc.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic,
		QueueID: 0, Max: 1, InvisibleTime: time.Second, PollTime: 20 * time.Millisecond})
	if err != nil || len(ms) != 0 {
		t.Fatalf("empty long poll: %v, %v", keysOf(ms), err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("returned after %v, before its poll time", d)
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
