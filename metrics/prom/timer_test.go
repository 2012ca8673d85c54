package prom_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/metrics/prom"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// timerBroker is a manual-mode broker on a test clock (ms) with topics T
// and U and timerPrecisionMs 100.
func timerBroker(t *testing.T) (*broker.Broker, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := broker.Config{BrokerName: "b1",
		Store: engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64, Clock: clock,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Timer: timer.Config{PrecisionMs: 100, MaxDelay: time.Hour}}
	cfg.Store = hooks.WithManual(cfg.Store, true)
	b, err := broker.Open(memfs.New(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, name := range []string{"T", "U"} {
		if err := b.Topics().Update(config.NewTopicConfig(name)); err != nil {
			t.Fatal(err)
		}
	}
	return b, clock
}

// TestScrapeTimers sends timer messages to two topics, moves the clock
// past their times and reads the pending counts, the deliveries and the
// lateness histogram from /metrics at each step.
func TestScrapeTimers(t *testing.T) {
	ctx := context.Background()
	b, clock := timerBroker(t)
	m := prom.New("")
	m.Attach(server.State{Store: b.Store(), HeldPulls: func() int { return 0 },
		Remoting: func() remoting.Stats { return remoting.Stats{} }, Clients: func() (int, int) { return 0, 0 },
		Timer: b.Timer()})
	send := func(topic, delayMs string) {
		t.Helper()
		r := b.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: topic,
			Properties: "TIMER_DELAY_MS\x01" + delayMs, Body: []byte("b")})
		if r.Code != broker.Success {
			t.Fatalf("send to %s: %+v", topic, r)
		}
	}
	step := func(ms int64) {
		t.Helper()
		clock.Advance(time.Duration(ms) * time.Millisecond)
		if _, err := b.DeliverDelayed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want map[string]float64, absent ...string) {
		t.Helper()
		got := scrape(t, m)
		for name, w := range want {
			if v, ok := got[name]; !ok || v != w {
				t.Errorf("%s: %s = %v (exported %v), want %v", when, name, v, ok, w)
			}
		}
		for _, name := range absent {
			if _, ok := got[name]; ok {
				t.Errorf("%s: %s exported", when, name)
			}
		}
	}
	const (
		pending   = "rocketstore_timer_messages_pending"
		pendingT  = `rocketstore_timer_topic_messages_pending{topic="T"}`
		pendingU  = `rocketstore_timer_topic_messages_pending{topic="U"}`
		delivered = "rocketstore_timer_messages_delivered_total"
		late      = "rocketstore_timer_delivery_lateness_seconds"
	)
	for range 3 {
		send("T", "250") // due at +300 (rounded up to the precision)
	}
	send("U", "1000")
	step(0)
	check("enqueued", map[string]float64{pending: 4, pendingT: 3, pendingU: 1, delivered: 0, late + "_count": 0})

	step(299)
	check("before T is due", map[string]float64{pending: 4, pendingT: 3, delivered: 0})

	step(51) // +350: T's three, 50 ms late
	check("T delivered", map[string]float64{pending: 1, pendingU: 1, delivered: 3, late + "_count": 3,
		late + "_sum": 0.15, late + `_bucket{le="0.01"}`: 0, late + `_bucket{le="0.05"}`: 3}, pendingT)

	step(2150) // +2500: U's one, 1.5 s late
	check("U delivered", map[string]float64{pending: 0, delivered: 4, late + "_count": 4, late + "_sum": 1.65,
		late + `_bucket{le="1"}`: 3, late + `_bucket{le="1.5"}`: 4, late + `_bucket{le="+Inf"}`: 4}, pendingT, pendingU)
	if n := b.Store().MaxOffsetInQueue("T", 0) + b.Store().MaxOffsetInQueue("U", 0); n != 4 {
		t.Errorf("%d messages in T/0 and U/0, want the 4 delivered", n)
	}
}

// TestServerAttachesTimer: a server hands its broker's timer service to
// the metrics, so that a running node exports the timer series.
func TestServerAttachesTimer(t *testing.T) {
	m := prom.New("")
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64,
			Logger: slog.New(slog.DiscardHandler)}},
		Server: server.Config{Logger: slog.New(slog.DiscardHandler), Metrics: m}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	got := scrape(t, m)
	for _, name := range []string{"rocketstore_timer_messages_pending", "rocketstore_timer_messages_delivered_total",
		"rocketstore_timer_delivery_lateness_seconds_count"} {
		if v, ok := got[name]; !ok || v != 0 {
			t.Errorf("%s = %v (exported %v), want 0", name, v, ok)
		}
	}
}
