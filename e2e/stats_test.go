package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/metrics/prom"
	"github.com/rocketstore/rocketstore/server"
)

// counterValue is the value of the unlabelled counter name in m.
func counterValue(t *testing.T, m *prom.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestBrokerStatsCountWhatClientsDid: with the official Go client, the
// runtime info's msgPutTotalTodayNow is the messages the producer sent
// and msgGetTotalTodayNow the messages the broker's pulls delivered (the
// Prometheus counter of the same pulls, and at least every message the
// push consumer got), not offsets: resetting the group's offset to 0 and
// consuming again adds the second delivery, never subtracts.
func TestBrokerStatsCountWhatClientsDid(t *testing.T) {
	t.Parallel()
	m := prom.New("")
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Broker: broker.Config{FlushConsumerOffsetInterval: time.Second},
		Server: server.Config{ScanInterval: time.Second, Metrics: m}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopNode(t, n)
	const sent = 30
	p := newProducer(t, n.Addr)
	for i := range sent {
		msg := primitive.NewMessage("StatsTopic", []byte("m"))
		msg.WithProperty("seq", strconv.Itoa(i))
		if res, err := p.SendSync(context.Background(), msg); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %+v", i, err, res)
		}
	}
	col, c := collect(t, consumerOpts(n.Addr, "StatsGroup"), "StatsTopic", consumer.MessageSelector{})
	col.waitDistinct(t, 30*time.Second, sent)
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	adm, err := admin.NewClient([]string{n.Addr}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	totals := func() (put, got int64) {
		t.Helper()
		info, err := adm.RuntimeInfo(context.Background(), n.BrokerAddr)
		if err != nil {
			t.Fatal(err)
		}
		put, _ = strconv.ParseInt(info["msgPutTotalTodayNow"], 10, 64)
		got, _ = strconv.ParseInt(info["msgGetTotalTodayNow"], 10, 64)
		return put, got
	}
	put, got := totals()
	consumed := col.n.Load()
	pulled := counterValue(t, m, "rocketstore_pulled_messages_total")
	if put != sent || got < consumed || float64(got) != pulled {
		t.Fatalf("msgPutTotalTodayNow %d (sent %d), msgGetTotalTodayNow %d (consumed %d, pulled metric %v)",
			put, sent, got, consumed, pulled)
	}

	// The client's last offset commit is a oneway request sent by its
	// Shutdown (of what it processed, which may be less than it received):
	// wait until the broker's committed offsets stop moving, or that commit
	// could land after the reset below and undo it.
	committed := func() (sum int64) {
		for q := range int32(4) {
			if off, err := adm.ConsumerOffset(context.Background(), n.BrokerAddr, "StatsGroup", "StatsTopic", q); err == nil {
				sum += off
			}
		}
		return sum
	}
	for last, deadline := int64(-1), time.Now().Add(10*time.Second); ; time.Sleep(300 * time.Millisecond) {
		now := committed()
		if now > 0 && now == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets of StatsGroup still moving 10 s after the consumer's shutdown (%d)", now)
		}
		last = now
	}
	// Consume it all again from offset 0: the second delivery adds up.
	for q := range int32(4) {
		if err := adm.UpdateConsumerOffset(context.Background(), n.BrokerAddr, "StatsGroup", "StatsTopic", q, 0); err != nil {
			t.Fatal(err)
		}
	}
	again, c2 := collect(t, consumerOpts(n.Addr, "StatsGroup"), "StatsTopic", consumer.MessageSelector{})
	again.waitDistinct(t, 30*time.Second, sent)
	if err := c2.Shutdown(); err != nil {
		t.Fatal(err)
	}
	put2, got2 := totals()
	if put2 != sent || got2 < got+sent || float64(got2) != counterValue(t, m, "rocketstore_pulled_messages_total") {
		t.Fatalf("after consuming again: put %d, got %d (was %d, +%d delivered)", put2, got2, got, again.n.Load())
	}
}
