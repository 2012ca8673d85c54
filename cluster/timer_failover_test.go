package cluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/hooks"
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

// timerFailover runs a 3-replica group whose timer services wait on a
// clock that never moves, so that a replica steps only when the test
// wakes it (or a timer message arrives, or it is elected): what a
// replica has seen at each failover is fixed. Three timers each are due
// at +1 s (early), +3 s (mid) and +60 s (late).
//
//  1. Every replica enqueues the nine (their pending counts show it).
//  2. At +1.5 s the leader alone steps and delivers the early timers;
//     it stops before any other replica steps again: the new leader must
//     find those deliveries in the replicated CommitLog.
//  3. The stopped replica comes back. At +3.5 s the followers step (the
//     leader does not): each follows up to the mid slot, which nobody
//     delivered. The leader stops; the next one must deliver mid.
//  4. At +61.5 s the leader delivers late.
//
// It returns the bodies in the real queue after each failover and in the
// end, with the store times, and the followers' read times and pending
// counts after their step in 3.
func timerFailover(t *testing.T, broken hooks.Timer) (first, second, final []string, at map[string][]int64, follow [][2]int64) {
	t0 := time.Now().UnixMilli() / 1000 * 1000
	// The store's time moves when the test says; its services wait on a
	// clock that never moves.
	clock := clockstest.NewSplit(time.UnixMilli(t0), clockwork.NewFakeClock())
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		nc.Broker.Store.Clock = clock
		nc.Broker.Timer = timer.Config{PrecisionMs: 100, MaxDelay: time.Hour}
		*hooks.TimerOf(&nc.Broker.Timer) = broken
	})
	const topic = "TimerT"
	for i := range 3 {
		for _, d := range []struct {
			name string
			ms   int64
		}{{"early", 1000}, {"mid", 3000}, {"late", 60_000}} {
			g.send(topic, 0, fmt.Sprint(d.name, i), "TIMER_DELAY_MS\x01"+strconv.FormatInt(d.ms+10*int64(i), 10))
		}
	}
	live := func(f func(i int, tm *timer.Service)) {
		for i, n := range g.nodes {
			if n != nil {
				f(i, n.Broker().Timer())
			}
		}
	}
	g.converge()
	live(func(i int, tm *timer.Service) {
		waitFor(t, fmt.Sprintf("n%d enqueues the nine timers", i+1), func() bool { return tm.Pending()[topic] == 9 })
	})

	// 2: the leader delivers early and stops.
	old := g.leader()
	clock.Advance(time.UnixMilli(t0 + 1500).Sub(clock.Now()))
	ob := g.nodes[old].Broker()
	ob.Timer().Wake()
	waitFor(t, "the leader passes the early slots", func() bool { return ob.Timer().ReadTime() >= t0+1600 })
	g.converge()
	g.stop(old)
	nb := g.nodes[g.leader()].Broker()
	waitFor(t, "the new leader passes the early slots", func() bool { return nb.Timer().ReadTime() >= t0+1600 })
	g.converge()
	first, _ = delivered(t, nb, topic)

	// 3: the followers step at +3.5 s; the leader stops before mid.
	g.start(old)
	g.converge()
	clock.Advance(time.UnixMilli(t0 + 3500).Sub(clock.Now()))
	lead := g.leader()
	live(func(i int, tm *timer.Service) {
		if i == lead {
			return
		}
		tm.Wake()
		waitFor(t, fmt.Sprintf("follower n%d steps", i+1), func() bool { return tm.ReadTime() >= t0+3000 && tm.Pending()[topic] <= 6 })
		follow = append(follow, [2]int64{tm.ReadTime() - t0, tm.Pending()[topic]})
	})
	g.stop(lead)
	nb = g.nodes[g.leader()].Broker()
	waitFor(t, "the new leader passes the mid slots", func() bool { return nb.Timer().ReadTime() >= t0+3600 })
	g.converge()
	second, _ = delivered(t, nb, topic)

	// 4: late.
	clock.Advance(time.UnixMilli(t0 + 61_500).Sub(clock.Now()))
	nb.Timer().Wake()
	waitFor(t, "the leader passes the late slots", func() bool { return nb.Timer().ReadTime() >= t0+61_600 })
	g.converge()
	final, at = delivered(t, nb, topic)
	for body, ts := range at {
		due := t0 + map[byte]int64{'e': 1000, 'm': 3000, 'l': 60_000}[body[0]] + 10*int64(body[len(body)-1]-'0')
		if ts[0] < due {
			t.Errorf("%s delivered at %d, %d ms before its time", body, ts[0], due-ts[0])
		}
	}
	return first, second, final, at, follow
}

func timerBodies(names ...string) []string {
	var out []string
	for _, n := range names {
		for i := range 3 {
			out = append(out, fmt.Sprint(n, i))
		}
	}
	slices.Sort(out)
	return out
}

// TestTimerFailover: across two failovers (see timerFailover) every
// timer is delivered once, none early: the new leader skips what the
// former one delivered after the new leader's last step, and delivers
// what the former one did not although its clock passed it while on
// standby. A follower's read time and pending count follow the leader's
// deliveries. The broken variants are caught: without the scan of the
// former leader's deliveries (NoDedup) the early timers are delivered
// twice; a follower that passes due slots it has not seen delivered
// (FollowUnseen) makes the mid timers never delivered.
func TestTimerFailover(t *testing.T) {
	t.Parallel()
	first, second, final, _, follow := timerFailover(t, hooks.Timer{})
	if want := timerBodies("early"); !slices.Equal(first, want) {
		t.Errorf("after the first failover the real queue holds %v, want %v", first, want)
	}
	if want := timerBodies("early", "mid"); !slices.Equal(second, want) {
		t.Errorf("after the second failover the real queue holds %v, want %v", second, want)
	}
	if want := timerBodies("early", "mid", "late"); !slices.Equal(final, want) {
		t.Errorf("in the end the real queue holds %v, want each of %v once", final, want)
	}
	for _, f := range follow {
		if f != [2]int64{3000, 6} {
			t.Errorf("a follower stepped to read time +%d ms with %d pending, want +3000 ms (the undelivered mid slot) and 6", f[0], f[1])
		}
	}
	t.Run("broken variant: NoDedup", func(t *testing.T) {
		t.Parallel()
		first, _, _, _, _ := timerFailover(t, hooks.Timer{NoDedup: true})
		if slices.Equal(first, timerBodies("early")) {
			t.Fatal("the broken variant delivered each early timer once: the test cannot tell")
		}
		t.Logf("broken variant caught: after the first failover the real queue holds %v", first)
	})
	t.Run("broken variant: FollowUnseen", func(t *testing.T) {
		t.Parallel()
		_, second, _, _, _ := timerFailover(t, hooks.Timer{FollowUnseen: true})
		if slices.Equal(second, timerBodies("early", "mid")) {
			t.Fatal("the broken variant delivered the mid timers: the test cannot tell")
		}
		t.Logf("broken variant caught: after the second failover the real queue holds %v", second)
	})
}
