package pop

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

func TestReceiveAckRedeliver(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	for _, k := range []string{"a", "b", "c"} {
		e.send(0, k, "")
	}
	ms := e.receive(0, 10, 10*time.Second, false)
	if got := keysOf(ms); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("received %v", got)
	}
	for _, m := range ms {
		if m.Attempt != 1 || m.ReconsumeTimes != 0 {
			t.Fatalf("%s: attempt %d reconsume %d", m.Properties["key"], m.Attempt, m.ReconsumeTimes)
		}
	}
	if err := e.ack(ms[1]); err != nil {
		t.Fatal(err)
	}
	if got := e.receive(0, 10, 10*time.Second, false); len(got) != 0 {
		t.Fatalf("invisible messages received: %v", keysOf(got))
	}
	e.advance(10 * time.Second)
	again := e.receive(0, 10, 10*time.Second, false)
	if got := keysOf(again); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("redelivered %v, want [a c]", got)
	}
	if again[0].Attempt != 2 || again[0].ReconsumeTimes != 1 {
		t.Fatalf("redelivery attempt %d reconsume %d", again[0].Attempt, again[0].ReconsumeTimes)
	}
	if err := e.ack(ms[0]); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("ack with the first delivery's handle: %v, want ErrStaleHandle", err)
	}
	if err := e.ack(ms[1]); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("second ack: %v, want ErrStaleHandle", err)
	}
}

func TestHandleRoundTrip(t *testing.T) {
	h := Handle{CkOffset: 7, PopTime: startClock, InvisibleTime: 30000, ReviveQueueID: 0, TopicType: "0",
		BrokerName: "broker-a", QueueID: 3, Offset: 42, CommitLogOffset: 4096}
	s := h.String()
	if s != "7 1700000000000 30000 0 0 broker-a 3 42 4096" {
		t.Fatalf("handle %q", s)
	}
	got, err := ParseHandle(s)
	if err != nil || got != h {
		t.Fatalf("ParseHandle(%q) = %+v, %v", s, got, err)
	}
	// ExtraInfoUtil's eight fields, without the CommitLog offset.
	h.CommitLogOffset = -1
	if got, err := ParseHandle("7 1700000000000 30000 0 0 broker-a 3 42"); err != nil || got != h {
		t.Fatalf("eight fields: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2 3", "x 1 2 0 0 b 3 4", "1 2 3 0 0 b q 4", "1 2 3 0 0 b 3 4 5 6", "1 2 3 0 0 b 3 4 x"} {
		if _, err := ParseHandle(bad); !errors.Is(err, ErrBadHandle) {
			t.Errorf("ParseHandle(%q): %v, want ErrBadHandle", bad, err)
		}
	}
}

func TestChangeInvisibleDuration(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.send(0, "a", "")
	ms := e.receive(0, 1, time.Second, false)
	h, err := e.svc.ChangeInvisibleDuration(context.Background(), testGroup, testTopic, ms[0].Handle.String(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.advance(30 * time.Second)
	if got := e.receive(0, 1, time.Second, false); len(got) != 0 {
		t.Fatalf("received before the changed invisible time ended: %v", keysOf(got))
	}
	if err := e.ack(ms[0]); !errors.Is(err, ErrStaleHandle) {
		t.Fatalf("ack with the handle before the change: %v", err)
	}
	if err := e.svc.Ack(context.Background(), testGroup, testTopic, h.String()); err != nil {
		t.Fatalf("ack with the changed handle: %v", err)
	}
	e.advance(time.Hour)
	if got := e.receive(0, 1, time.Second, false); len(got) != 0 {
		t.Fatalf("acked message received: %v", keysOf(got))
	}
}

// TestChangeInvisibleDurationShortens: a shorter invisible time makes
// the message visible at its new end, not at the one it replaced (a
// receive skips the scan for due messages while none can be due).
func TestChangeInvisibleDurationShortens(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.send(0, "a", "")
	e.send(0, "b", "")
	ms := e.receive(0, 2, time.Hour, false)
	if len(ms) != 2 {
		t.Fatalf("received %v", keysOf(ms))
	}
	if got := e.receive(0, 1, time.Hour, false); len(got) != 0 {
		t.Fatalf("received while both are invisible: %v", keysOf(got))
	}
	if _, err := e.svc.ChangeInvisibleDuration(context.Background(), testGroup, testTopic, ms[1].Handle.String(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.dispatch()
	e.advance(time.Second)
	got := e.receive(0, 2, time.Hour, false)
	if !slices.Equal(keysOf(got), []string{"b"}) || got[0].Attempt != 2 {
		t.Fatalf("after the shortened invisible time: %v, want b at attempt 2", keysOf(got))
	}
}

func TestDeadLetterAfterMaxAttempts(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.init(hooks.Pop{}, 3)
	e.close()
	e.open()
	e.send(0, "a", "")
	for attempt := int32(1); attempt <= 3; attempt++ {
		ms := e.receive(0, 1, time.Second, false)
		if len(ms) != 1 || ms[0].Attempt != attempt {
			t.Fatalf("attempt %d: received %+v", attempt, ms)
		}
		e.advance(time.Second)
	}
	rep, err := e.svc.Revive(context.Background())
	if err != nil || rep.DeadLettered != 1 {
		t.Fatalf("Revive: %+v, %v", rep, err)
	}
	if got := e.dlqKeys(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("DLQ holds %v", got)
	}
	if got := e.receive(0, 1, time.Second, false); len(got) != 0 {
		t.Fatalf("dead-lettered message received: %v", keysOf(got))
	}
}

func TestFIFOMessageGroups(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	for _, m := range [][2]string{{"a1", "A"}, {"a2", "A"}, {"b1", "B"}, {"a3", "A"}, {"b2", "B"}} {
		e.send(0, m[0], m[1])
	}
	ms := e.receive(0, 10, 10*time.Second, true)
	if got := keysOf(ms); !slices.Equal(got, []string{"a1", "b1"}) {
		t.Fatalf("first FIFO receive %v, want [a1 b1]", got)
	}
	if got := e.receive(0, 10, 10*time.Second, true); len(got) != 0 {
		t.Fatalf("received while each group has one in flight: %v", keysOf(got))
	}
	if err := e.ack(ms[0]); err != nil {
		t.Fatal(err)
	}
	// The held messages survive a crash.
	e.powerCut()
	next := e.receive(0, 10, 10*time.Second, true)
	if got := keysOf(next); !slices.Equal(got, []string{"a2"}) {
		t.Fatalf("after acking a1: %v, want [a2]", got)
	}
	e.advance(10 * time.Second)
	redo := e.receive(0, 10, 10*time.Second, true)
	if got := keysOf(redo); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Fatalf("after the invisible time: %v, want [a2 b1] again", got)
	}
}

func TestStateSurvivesPowerCut(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.send(0, "a", "")
	e.send(0, "b", "")
	ms := e.receive(0, 10, 10*time.Second, false)
	if err := e.ack(ms[0]); err != nil {
		t.Fatal(err)
	}
	e.powerCut()
	if got := e.receive(0, 10, 10*time.Second, false); len(got) != 0 {
		t.Fatalf("after the cut, received before the invisible time ended: %v", keysOf(got))
	}
	e.advance(10 * time.Second)
	if got := keysOf(e.receive(0, 10, 10*time.Second, false)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after the cut and the invisible time: %v, want [b]", got)
	}
}

func TestReceiveRejectsBadRequests(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	for _, r := range []ReceiveRequest{
		{Topic: testTopic, Max: 1, InvisibleTime: time.Second},
		{Group: testGroup, Topic: testTopic, Max: 0, InvisibleTime: time.Second},
		{Group: testGroup, Topic: testTopic, Max: 1},
		{Group: testGroup, Topic: testTopic, QueueID: -2, Max: 1, InvisibleTime: time.Second},
	} {
		if _, err := e.svc.Receive(context.Background(), r); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Receive(%+v): %v, want ErrBadRequest", r, err)
		}
	}
}

// TestReloadTakesRecordsWrittenElsewhere: a service that did not write
// the records (a replica that followed the group's log) knows the
// in-flight messages after Reload.
func TestReloadTakesRecordsWrittenElsewhere(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.send(0, "a", "")
	e.send(0, "b", "")
	follower, err := Open(context.Background(), e.store, e.svc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	ms := e.receive(0, 1, time.Minute, false)
	if err := e.ack(ms[0]); err != nil {
		t.Fatal(err)
	}
	e.receive(0, 1, time.Minute, false) // b in flight
	if err := follower.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := follower.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic, QueueID: 0,
		Max: 10, InvisibleTime: time.Minute})
	if err != nil || len(got) != 0 {
		t.Fatalf("after Reload, received %v, %v: want nothing (a acked, b in flight)", keysOf(got), err)
	}
	e.advance(time.Minute)
	got, _ = follower.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic, QueueID: 0,
		Max: 10, InvisibleTime: time.Minute})
	if !slices.Equal(keysOf(got), []string{"b"}) || got[0].Attempt != 2 {
		t.Fatalf("after the invisible time: %v", keysOf(got))
	}
}

// TestReviveFailuresCountedAndRateLimited: every failed background pass
// counts; the log takes one line a minute.
func TestReviveFailuresCountedAndRateLimited(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	var logs strings.Builder
	e.svc.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	for range 3 {
		e.svc.reviveFailed(errors.New("DLQ refused"))
	}
	if n := e.svc.ReviveErrors(); n != 3 {
		t.Fatalf("ReviveErrors = %d, want 3", n)
	}
	if n := strings.Count(logs.String(), "revive pass failed"); n != 1 {
		t.Fatalf("%d log lines for 3 failures in a minute, want 1:\n%s", n, logs.String())
	}
	// The minute is the service's clock's.
	e.advance(reviveLogInterval - time.Millisecond)
	e.svc.reviveFailed(errors.New("DLQ refused"))
	if n := strings.Count(logs.String(), "revive pass failed"); n != 1 {
		t.Fatalf("%d log lines within the minute, want 1:\n%s", n, logs.String())
	}
	e.advance(time.Millisecond)
	e.svc.reviveFailed(errors.New("DLQ refused"))
	if n := strings.Count(logs.String(), "revive pass failed"); n != 2 {
		t.Fatalf("%d log lines once the minute passed, want 2:\n%s", n, logs.String())
	}
}

// TestDeadLetterFailureBlocksOnlyItsMessage: when the DLQ refuses a
// message, it is not delivered again, and the queue's other messages are.
func TestDeadLetterFailureBlocksOnlyItsMessage(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.init(hooks.Pop{}, 1)
	e.cfg.DeadLetter = func(context.Context, string, *record.MessageExt) error { return errors.New("DLQ refused") }
	e.close()
	e.open()
	e.send(0, "a", "")
	if got := keysOf(e.receive(0, 1, time.Second, false)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first receive: %v", got)
	}
	e.advance(time.Second)
	e.send(0, "b", "")
	if got := keysOf(e.receive(0, 10, time.Second, false)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("with a's DLQ write refused: %v, want [b]", got)
	}
	if e.svc.ReviveErrors() == 0 {
		t.Fatal("the refused DLQ write was not counted")
	}
}

// TestCompactReplaysFromSnapshot: after Compact, a restart replays from
// the snapshot (not from the first record) and finds the same state.
func TestCompactReplaysFromSnapshot(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	for _, k := range []string{"a", "b", "c"} {
		e.send(0, k, "")
	}
	ms := e.receive(0, 3, time.Minute, false)
	if err := e.ack(ms[0]); err != nil {
		t.Fatal(err)
	}
	before := e.store.MaxOffsetInQueue(testRevive, 0)
	if err := e.svc.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.dispatch()
	e.powerCut()
	from, err := e.svc.replayStart()
	if err != nil || from != before {
		t.Fatalf("replay starts at %d (%v), want the snapshot's start %d", from, err, before)
	}
	if got := e.receive(0, 3, time.Minute, false); len(got) != 0 {
		t.Fatalf("after the restart, received before the invisible time ended: %v", keysOf(got))
	}
	if err := e.ack(ms[1]); err != nil {
		t.Fatalf("ack with a handle from before the snapshot: %v", err)
	}
	e.advance(time.Minute)
	got := e.receive(0, 3, time.Minute, false)
	if !slices.Equal(keysOf(got), []string{"c"}) || got[0].Attempt != 2 {
		t.Fatalf("after the invisible time: %v", keysOf(got))
	}
}
