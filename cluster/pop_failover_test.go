package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/pop"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
)

// TestPopFailover: pop state goes through the group's log, so a replica
// that starts leading rebuilds it: after the leader fails, the new leader
// delivers the messages never delivered, keeps the in-flight ones
// invisible until their invisible time ends (then delivers them again,
// their attempt counted), and never delivers an acked one again.
func TestPopFailover(t *testing.T) {
	t.Parallel()
	// The store's time moves when the test says; its services' timers
	// run in real time.
	clock := clockstest.NewSplit(time.Now(), clockwork.NewRealClock())
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Broker.Store.Clock = clock })
	for i := range 10 {
		g.send("PopT", 0, fmt.Sprint("m", i), "")
	}
	g.converge()
	ctx := context.Background()
	receive := func(b *broker.Broker) []pop.Message {
		t.Helper()
		ms, err := b.Pop().Receive(ctx, pop.ReceiveRequest{Group: "G", Topic: "PopT", QueueID: 0, Max: 32,
			InvisibleTime: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	bodies := func(ms []pop.Message) (out []string) {
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s#%d", m.Body, m.Attempt))
		}
		slices.Sort(out)
		return out
	}
	old := g.leader()
	b := g.nodes[old].Broker()
	ms, err := b.Pop().Receive(ctx, pop.ReceiveRequest{Group: "G", Topic: "PopT", QueueID: 0, Max: 6,
		InvisibleTime: time.Minute})
	if err != nil || len(ms) != 6 {
		t.Fatalf("first receive: %d messages, %v", len(ms), err)
	}
	var acks []string
	for _, m := range ms[:3] {
		acks = append(acks, m.Handle.String())
	}
	for i, err := range b.Pop().AckBatch(ctx, "G", "PopT", acks) {
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
	}
	g.converge()
	g.stop(old)
	nb := g.nodes[g.leader()].Broker()
	if got, want := bodies(receive(nb)), []string{"m6#1", "m7#1", "m8#1", "m9#1"}; !slices.Equal(got, want) {
		t.Fatalf("the new leader delivered %v, want the never delivered %v", got, want)
	}
	clock.Advance(2 * time.Minute)
	again := receive(nb)
	if got, want := bodies(again), []string{"m3#2", "m4#2", "m5#2", "m6#2", "m7#2", "m8#2", "m9#2"}; !slices.Equal(got, want) {
		t.Fatalf("after the invisible time the new leader delivered %v, want the unacked %v (m0-m2 were acked)", got, want)
	}
	var hs []string
	for _, m := range again {
		hs = append(hs, m.Handle.String())
	}
	for i, err := range nb.Pop().AckBatch(ctx, "G", "PopT", hs) {
		if err != nil {
			t.Fatalf("ack %d on the new leader: %v", i, err)
		}
	}
	clock.Advance(2 * time.Minute)
	if got := receive(nb); len(got) != 0 {
		t.Fatalf("everything was acked, yet the new leader delivered %v", bodies(got))
	}
}
