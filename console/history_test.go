package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/record"
)

// TestStatsHistoryAtPageLoad: the console samples the cluster's totals
// by itself, so that the first /api/stats a page makes already returns a
// history to draw; its totals are the messages the client sent and those
// its pulls received.
func TestStatsHistoryAtPageLoad(t *testing.T) {
	clock := clockwork.NewFakeClock()
	e := newEnv(t, console.Config{Clock: clock})
	// tick moves the console's clock to the next sample and returns once
	// it is stored: while the sampler waits, its timer is the clock's
	// one waiter.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := func() {
		t.Helper()
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Two samples before the sends (the sampler's first, taken as it
	// starts, and one tick's).
	tick()
	for range 3 {
		if _, err := e.adm.SendMessage(context.Background(), e.n.BrokerAddr, "P",
			&record.Message{Topic: "Clicks", Body: []byte("click")}); err != nil {
			t.Fatal(err)
		}
	}
	// The ConsumeQueue is built after the send's answer (the reput
	// dispatch): wait until the queue holds the three, as a client's long
	// poll would, before pulling without suspension.
	e.waitQueue("Clicks", 0, 3)
	// Two pulls of the queue deliver 2 + 3 messages (the second from
	// offset 0 again): got counts deliveries, not offsets.
	var got int
	for _, max := range []int{2, 3} {
		r, err := e.adm.Pull(context.Background(), e.n.BrokerAddr, "Analytics", "Clicks", 0, 0, max)
		if err != nil {
			t.Fatal(err)
		}
		got += len(r.Messages)
	}
	if got != 5 {
		t.Fatalf("pulled %d messages, want 5", got)
	}
	// Three more samples, all after the pulls.
	for range 3 {
		tick()
	}
	var h console.History
	e.get("/api/stats", &h)
	n := len(h.Samples)
	if n < 5 || h.Samples[n-1].PutTotal != 3 || h.Samples[n-1].GetTotal != 5 {
		t.Fatalf("history %+v: want 5 samples or more ending at put total 3, got total 5", h.Samples)
	}
	if h.Samples[0].PutTotal != 0 {
		t.Fatalf("history %+v: the first sample, taken before the sends, counts puts", h.Samples)
	}
	for i := 1; i < n; i++ {
		if h.Samples[i].At < h.Samples[i-1].At || h.Samples[i].PutTotal < h.Samples[i-1].PutTotal {
			t.Fatalf("samples out of order: %+v", h.Samples)
		}
	}
}
