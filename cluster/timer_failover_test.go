package cluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/cluster"
)

// delivered returns the sorted bodies of topic's queue 0 on b, and the
// store times of each body's messages.
func delivered(t *testing.T, b *broker.Broker, topic string) (bodies []string, at map[string][]int64) {
	t.Helper()
	at = map[string][]int64{}
	r, err := b.Store().GetMessage(topic, 0, 0, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for _, v := range r.Messages {
		m, err := b.Store().LookMessageByOffset(v.CommitLogOffset)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(m.Body))
		at[string(m.Body)] = append(at[string(m.Body)], m.StoreTimestamp)
	}
	slices.Sort(bodies)
	return bodies, at
}

// TestTimerFailover: timer messages sent to the leader, which delivers
// those due and stops before the others are due. The new leader, whose
// timer service only waited until then, rebuilds its wheel from the
// replicated timer topic: it delivers the ones already delivered never
// again and the others at their time, never before (not at 1 ms before
// their slot), each once.
func TestTimerFailover(t *testing.T) {
	var clock atomic.Int64
	t0 := time.Now().UnixMilli() / 1000 * 1000
	clock.Store(t0)
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		nc.Broker.Store.Now = clock.Load
		nc.Broker.Timer = timer.Config{PrecisionMs: 100, MaxDelay: time.Hour}
	})
	const topic = "TimerT"
	due := map[string]int64{}
	var early, all []string
	for i := range 5 {
		e, l := fmt.Sprint("early", i), fmt.Sprint("late", i)
		g.send(topic, 0, e, "TIMER_DELAY_MS\x01"+strconv.Itoa(1000+10*i))
		g.send(topic, 0, l, "TIMER_DELAY_MS\x01"+strconv.Itoa(60_000+10*i))
		due[e], due[l] = t0+1000+10*int64(i), t0+60_000+10*int64(i)
		early, all = append(early, e), append(all, e, l)
	}
	slices.Sort(early)
	slices.Sort(all)
	old := g.leader()
	ob := g.nodes[old].Broker()
	clock.Add(1500)
	ob.Timer().Wake()
	waitFor(t, "the leader delivers the early timers", func() bool {
		got, _ := delivered(t, ob, topic)
		return len(got) >= len(early)
	})
	g.converge()
	if got, _ := delivered(t, ob, topic); !slices.Equal(got, early) {
		t.Fatalf("the leader delivered %v by +1.5 s, want %v", got, early)
	}

	g.stop(old)
	nb := g.nodes[g.leader()].Broker()
	waitFor(t, "the new leader enqueues the timer topic", func() bool {
		nb.Timer().Wake()
		return nb.Timer().Pending()[topic] == 5
	})
	g.converge()
	if got, _ := delivered(t, nb, topic); !slices.Equal(got, early) {
		t.Fatalf("after the failover, before the late timers are due, the new leader holds %v, want %v", got, early)
	}

	// One ms before the first late timer's slot: the new leader passes
	// every slot before it and delivers nothing new.
	clock.Store(t0 + 59_999)
	waitFor(t, "the new leader reaches +59.999 s", func() bool {
		nb.Timer().Wake()
		return nb.Timer().ReadTime() >= t0+60_000
	})
	g.converge()
	if got, _ := delivered(t, nb, topic); !slices.Equal(got, early) {
		t.Fatalf("at +59.999 s the new leader holds %v, want only %v", got, early)
	}

	clock.Store(t0 + 61_500)
	waitFor(t, "the new leader delivers the late timers", func() bool {
		nb.Timer().Wake()
		return len(nb.Timer().Pending()) == 0
	})
	g.converge()
	got, at := delivered(t, nb, topic)
	if !slices.Equal(got, all) {
		t.Fatalf("delivered %v, want each of %v once", got, all)
	}
	for body, ts := range at {
		if ts[0] < due[body] {
			t.Errorf("%s delivered at %d, %d ms before its time", body, ts[0], due[body]-ts[0])
		}
	}
}
