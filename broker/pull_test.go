package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/record"
)

func TestPullResponseCodes(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 2)
	for i := 0; i < 3; i++ {
		put(t, b, msg("T", 0, "A", ""))
	}
	ctx := context.Background()
	noPerm := config.NewTopicConfig("W")
	noPerm.Perm = record.PermWrite
	if err := b.Topics().Update(noPerm); err != nil {
		t.Fatal(err)
	}
	disabled := config.NewSubscriptionGroupConfig("off")
	disabled.ConsumeEnable = false
	if err := b.Groups().Update(disabled); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(r *broker.PullRequest)
		want broker.ResponseCode
		next int64
	}{
		{"found", func(r *broker.PullRequest) {}, broker.Success, 3},
		{"overflow one", func(r *broker.PullRequest) { r.QueueOffset = 3 }, broker.PullNotFound, 3},
		{"overflow badly", func(r *broker.PullRequest) { r.QueueOffset = 1 << 40 }, broker.PullOffsetMoved, 3},
		{"negative offset", func(r *broker.PullRequest) { r.QueueOffset = -5 }, broker.PullOffsetMoved, 0},
		{"empty queue at 0", func(r *broker.PullRequest) { r.QueueID = 1 }, broker.PullNotFound, 0},
		{"empty queue at 7", func(r *broker.PullRequest) { r.QueueID, r.QueueOffset = 1, 7 }, broker.PullOffsetMoved, 0},
		{"no matched message", func(r *broker.PullRequest) { r.Subscription = "B" }, broker.PullRetryImmediately, 3},
		{"queue id out of range", func(r *broker.PullRequest) { r.QueueID = 2 }, broker.SystemError, 0},
		{"queue id negative", func(r *broker.PullRequest) { r.QueueID = -1 }, broker.SystemError, 0},
		{"unknown topic", func(r *broker.PullRequest) { r.Topic = "nope" }, broker.TopicNotExist, 0},
		{"topic not readable", func(r *broker.PullRequest) { r.Topic = "W" }, broker.NoPermission, 0},
		{"group consume disabled", func(r *broker.PullRequest) { r.ConsumerGroup = "off" }, broker.NoPermission, 0},
		{"bad expression", func(r *broker.PullRequest) { r.Subscription = "||" }, broker.SubscriptionParseFailed, 0},
		{"sql92", func(r *broker.PullRequest) { r.ExpressionType = "SQL92" }, broker.SystemError, 0},
		{"no registered group", func(r *broker.PullRequest) { r.SysFlag = 0 }, broker.SubscriptionNotExist, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pullReq("g", "T", 0, 0)
			c.mod(r)
			resp, err := b.Pull(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != c.want || (c.want != broker.SystemError && c.want < 16 && resp.NextBeginOffset != c.next) ||
				((c.want == broker.PullOffsetMoved || c.want == broker.PullNotFound || c.want == broker.PullRetryImmediately) && resp.NextBeginOffset != c.next) {
				t.Fatalf("code %v next %d (%v), want %v next %d; remark %q", resp.Code, resp.NextBeginOffset, resp.Status, c.want, c.next, resp.Remark)
			}
		})
	}
}

func TestPullBodyAndCommitOffset(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	var recs []engine.PutResult
	for i := 0; i < 3; i++ {
		recs = append(recs, put(t, b, msg("T", 0, "A", "")))
	}
	r := pullReq("g", "T", 0, 1)
	r.SysFlag |= broker.FlagCommitOffset
	r.CommitOffset = 1
	resp, err := b.Pull(context.Background(), r)
	if err != nil || resp.Code != broker.Success || resp.MsgCount != 2 {
		t.Fatalf("%+v %v", resp, err)
	}
	m, err := record.Decode(resp.Body, recs[1].WroteOffset, true)
	if err != nil || m.QueueOffset != 1 {
		t.Fatalf("first record: %+v %v", m, err)
	}
	if got := b.Offsets().Query("g", "T", 0); got != 1 {
		t.Fatalf("committed %d, want 1", got)
	}
}

func TestPullRegisteredSubscription(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	sd, _ := filter.BuildSubscriptionData("T", "A")
	sd.SubVersion = 10
	if code, _ := b.Heartbeat("c1", []broker.ConsumerData{{GroupName: "g", Subscriptions: []*filter.SubscriptionData{sd}}}); code != broker.Success {
		t.Fatal(code)
	}
	if _, ok := b.Topics().Get(config.RetryTopic("g")); !ok {
		t.Fatal("heartbeat did not create the retry topic")
	}
	r := pullReq("g", "T", 0, 0)
	r.SysFlag = 0
	r.SubVersion = 10
	if resp, _ := b.Pull(context.Background(), r); resp.Code != broker.Success {
		t.Fatalf("%+v", resp)
	}
	r.SubVersion = 11
	if resp, _ := b.Pull(context.Background(), r); resp.Code != broker.SubscriptionNotLatest {
		t.Fatalf("%+v", resp)
	}
	r.Topic = config.RetryTopic("g")
	r.SubVersion = 0
	if resp, _ := b.Pull(context.Background(), r); resp.Code != broker.SubscriptionNotExist {
		t.Fatalf("%+v", resp)
	}
}

func TestPullGroupNotExist(t *testing.T) {
	cfg := testConfig()
	cfg.DisableAutoCreateSubscriptionGroup = true
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	resp, _ := b.Pull(context.Background(), pullReq("nogroup", "T", 0, 0))
	if resp.Code != broker.SubscriptionGroupNotExist {
		t.Fatalf("%+v", resp)
	}
}

func suspendReq(sub string, timeout int64) *broker.PullRequest {
	r := pullReq("g", "T", 0, 0)
	r.SysFlag |= broker.FlagSuspend
	r.Subscription = sub
	r.SuspendTimeoutMillis = timeout
	return r
}

// pullAsync runs a pull in a goroutine and waits until it is held.
func pullAsync(t *testing.T, b *broker.Broker, r *broker.PullRequest) <-chan *broker.PullResponse {
	t.Helper()
	ch := make(chan *broker.PullResponse, 1)
	before := b.HeldPulls()
	go func() {
		resp, err := b.Pull(context.Background(), r)
		if err != nil {
			t.Error(err)
		}
		ch <- resp
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.WaitHeldPulls(ctx, before+1); err != nil {
		t.Fatalf("pull not held: %v", err)
	}
	return ch
}

func TestLongPollWokenByMatchingPut(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	ch := pullAsync(t, b, suspendReq("A", 30000))
	start := time.Now()
	put(t, b, msg("T", 0, "A", ""))
	select {
	case resp := <-ch:
		if resp.Code != broker.Success || resp.MsgCount != 1 {
			t.Fatalf("%+v", resp)
		}
		// Generous for a loaded CI machine; the benchmark measures the
		// real latency.
		if d := time.Since(start); d > time.Second {
			t.Fatalf("woken after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held pull not woken")
	}
}

func TestLongPollNotWokenByOtherTag(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	ch := pullAsync(t, b, suspendReq("A", 300))
	// put returns once the record is dispatched, and the arrival hook
	// runs in dispatch: a wake-up would have dropped the request by now.
	put(t, b, msg("T", 0, "B", ""))
	if b.HeldPulls() != 1 {
		t.Fatal("woken by a non-matching tag")
	}
	resp := <-ch // the timeout re-runs it: the B message is skipped
	if resp.Code != broker.PullRetryImmediately || resp.NextBeginOffset != 1 {
		t.Fatalf("%+v", resp)
	}
}

func TestLongPollTimeout(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	start := time.Now()
	resp, err := b.Pull(context.Background(), suspendReq("*", 50))
	if err != nil || resp.Code != broker.PullNotFound {
		t.Fatalf("%+v %v", resp, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("returned after %v, before the timeout", d)
	}
	if b.HeldPulls() != 0 {
		t.Fatal("request still held")
	}
}

func TestLongPollContextCancel(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	ctx, cancel := context.WithCancel(context.Background())
	b.SetBeforeSuspend(cancel)
	_, err := b.Pull(ctx, suspendReq("*", 30000))
	if !errors.Is(err, context.Canceled) || b.HeldPulls() != 0 {
		t.Fatalf("err %v, held %d", err, b.HeldPulls())
	}
}

func TestLongPollReleasedByClose(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	createTopic(t, b, "T", 1)
	errc := make(chan error, 1)
	go func() { _, err := b.Pull(context.Background(), suspendReq("*", 30000)); errc <- err }()
	if err := b.WaitHeldPulls(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, broker.ErrClosed) {
		t.Fatal(err)
	}
}

// TestLongPollNoLostWakeup puts and dispatches a matching message after the
// pull found nothing but before it is held: the arrival notification finds
// no waiter, and only the re-check after registration can see it.
func TestLongPollNoLostWakeup(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	b.SetBeforeSuspend(func() { put(t, b, msg("T", 0, "A", "")) })
	start := time.Now()
	resp, err := b.Pull(context.Background(), suspendReq("A", 30000))
	if err != nil || resp.Code != broker.Success || resp.MsgCount != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v: the wake-up was lost", d)
	}
}

func TestShortPolling(t *testing.T) {
	cfg := testConfig()
	cfg.ShortPolling, cfg.ShortPollingTime = true, 80*time.Millisecond
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	ch := pullAsync(t, b, suspendReq("*", 30000))
	start := time.Now()
	put(t, b, msg("T", 0, "A", ""))
	resp := <-ch
	if resp.Code != broker.Success {
		t.Fatalf("%+v", resp)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("short polling woken by arrival after %v", d)
	}
}

// TestStartPull: a suspendable pull that finds messages is answered by
// StartPull without holding; one that finds nothing comes back as a
// HeldPull (nothing answered, the offset committed once), whose Wait is
// woken by the next matching put.
func TestStartPull(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	r := suspendReq("A", 30000)
	resp, held, err := b.StartPull(r)
	if err != nil || held != nil || resp == nil || resp.Code != broker.Success || resp.MsgCount != 1 {
		t.Fatalf("found: %+v %v %v", resp, held, err)
	}
	r = suspendReq("A", 30000)
	r.QueueOffset = 1
	r.SysFlag |= broker.FlagCommitOffset
	r.CommitOffset = 1
	resp, held, err = b.StartPull(r)
	if err != nil || held == nil || resp != nil {
		t.Fatalf("nothing found: %+v %v %v", resp, held, err)
	}
	if got := b.Offsets().Query("g", "T", 0); got != 1 {
		t.Fatalf("committed %d on the first pass, want 1", got)
	}
	done := make(chan *broker.PullResponse, 1)
	go func() {
		resp, err := held.Wait(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.WaitHeldPulls(ctx, 1); err != nil {
		t.Fatalf("pull not held: %v", err)
	}
	put(t, b, msg("T", 0, "A", ""))
	select {
	case resp := <-done:
		if resp.Code != broker.Success || resp.MsgCount != 1 || resp.NextBeginOffset != 2 {
			t.Fatalf("woken: %+v", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held pull not woken")
	}
	b.Close()
	if _, _, err := b.StartPull(suspendReq("A", 30000)); !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
