package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/pop"
)

// TestPopThroughBroker: the broker's pop shares the group's consumer
// offset with pulls (the furthest wins), and a message past the group's
// retryMaxTimes + 1 deliveries goes to its DLQ through the send-back path.
func TestPopThroughBroker(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := testConfig()
	cfg.Store.Clock = clock
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	g := config.NewSubscriptionGroupConfig("g")
	g.RetryMaxTimes = 1
	b.Groups().Update(g)
	for _, k := range []string{"k1", "k2", "k3"} {
		put(t, b, msg("T", 0, "A", k))
	}
	// A pull consumer of the group committed past k1: pop starts there.
	b.Offsets().Commit("pull", "g", "T", 0, 1)
	ctx := context.Background()
	receive := func() []pop.Message {
		t.Helper()
		ms, err := b.Pop().Receive(ctx, pop.ReceiveRequest{Group: "g", Topic: "T", QueueID: pop.AllQueues, Max: 1,
			InvisibleTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	ms := receive()
	if len(ms) != 1 || ms[0].Properties["KEYS"] != "k2" || ms[0].Attempt != 1 {
		t.Fatalf("first pop: %+v, want k2 attempt 1", ms)
	}
	if off := b.Offsets().Query("g", "T", 0); off != 2 {
		t.Fatalf("consumer offset after the pop: %d, want 2", off)
	}
	clock.Advance(1000 * time.Millisecond)
	if ms = receive(); len(ms) != 1 || ms[0].Properties["KEYS"] != "k2" || ms[0].Attempt != 2 {
		t.Fatalf("second pop: %+v, want k2 attempt 2", ms)
	}
	clock.Advance(1000 * time.Millisecond)
	rep, err := b.RevivePop(ctx)
	if err != nil || rep.DeadLettered != 1 {
		t.Fatalf("RevivePop: %+v, %v", rep, err)
	}
	dlq := waitMessage(t, b, config.DLQTopic("g"), 0, 0, 10*time.Second)
	if dlq.Properties["KEYS"] != "k2" {
		t.Fatalf("DLQ holds %+v", dlq)
	}
	if ms = receive(); len(ms) != 1 || ms[0].Properties["KEYS"] != "k3" {
		t.Fatalf("pop after the DLQ: %+v, want k3", ms)
	}
	if err := b.Pop().Ack(ctx, "g", "T", ms[0].Handle.String()); err != nil {
		t.Fatal(err)
	}
	if got := b.ReviveTopic(); got != "rmq_sys_REVIVE_LOG_"+broker.DefaultBrokerClusterName {
		t.Fatalf("revive topic %q", got)
	}
}

// TestPopLongPollThroughBroker: the broker's arrival dispatcher wakes a
// long-polling receive when a message is stored.
func TestPopLongPollThroughBroker(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 2)
	got := make(chan []pop.Message, 1)
	start := time.Now()
	go func() {
		ms, err := b.Pop().Receive(context.Background(), pop.ReceiveRequest{Group: "g", Topic: "T",
			QueueID: pop.AllQueues, Max: 4, InvisibleTime: time.Minute, PollTime: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- ms
	}()
	put(t, b, msg("T", 1, "A", "k1"))
	ms := <-got
	if len(ms) != 1 || ms[0].Properties["KEYS"] != "k1" {
		t.Fatalf("long poll returned %+v", ms)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("long poll returned after %v: not woken by the arrival", d)
	}
}
