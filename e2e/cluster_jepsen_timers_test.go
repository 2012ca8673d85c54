package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// timerPrecisionMs is the group's wheel slot in the timer Jepsen test:
// short, so that lateness shows the failover and not the rounding.
const timerPrecisionMs = 100

// TestClusterJepsenTimers runs the 3-replica group of TestClusterJepsen
// (three `rocketstore serve` processes, Raft through the fault proxy)
// while official-client producers send timer messages (TIMER_DELIVER_MS)
// whose delivery times are spread across two faults: a SIGKILL of the
// leader, then (after the killed replica is back) a partition of the new
// leader from the majority. Some timers fall due before each fault, some
// during the election and some after. A fresh consumer then reads the
// real topic to its end, and the checker, from the clients' history
// alone: every acknowledged timer is consumed; none is stored in the
// real topic at two queue positions (a second delivery) unless its send
// failed or took the client's timeout (then the client may have sent it
// twice); none is stored before its delivery time; the lateness (store
// time − delivery time) is reported as p50/p99/max and bounded.
//
// The store time is the leader's clock at the replicated put, and every
// process runs on this host's one clock, so "not before its time" is
// checked with no skew margin: the broker rounds delivery times up to
// its precision, so even a margin of 0 ms must hold.
func TestClusterJepsenTimers(t *testing.T) {
	bin := buildRocketstore(t)
	began := time.Now()
	g := startJepsenGroupConf(t, bin, nil, fmt.Sprintf("timerPrecisionMs: %d\n", timerPrecisionMs))
	l := g.waitLeader(t, 60*time.Second)
	h := &timerHistory{sent: map[string]*timerSend{}, consumed: map[string]map[[2]int64]int64{}}

	// Fault 1: the leader is killed while the first batch falls due.
	start := time.Now()
	h.sendBatch(t, g.nsList, "a", 240, start.Add(3*time.Second), 8*time.Second)
	t.Logf("%v batch a sent: %d acknowledged", since(began), h.ackedCount())
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	t.Logf("%v fault 1: SIGKILL leader n%d", since(began), l+1)
	at := time.Now()
	g.kill(l)
	moved := g.watchRoutes(at, l)
	nl := g.waitOtherLeader(t, l, 30*time.Second)
	h.fault(at)
	t.Logf("%v n%d leads (%v after the kill); restart n%d", since(began), nl+1, time.Since(at).Round(time.Millisecond), l+1)
	g.start(t, l)
	<-moved

	// Fault 2: a new producer (a fresh route) sends the second batch, and
	// the new leader is cut off from the majority while it falls due.
	start = time.Now()
	h.sendBatch(t, g.nsList, "b", 160, start.Add(2500*time.Millisecond), 6*time.Second)
	t.Logf("%v batch b sent: %d acknowledged in all", since(began), h.ackedCount())
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	t.Logf("%v fault 2: partition leader n%d from the majority", since(began), nl+1)
	at = time.Now()
	g.proxy.isolate(nl, 3)
	moved = g.watchRoutes(at, nl)
	g.waitOtherLeader(t, nl, 30*time.Second)
	h.fault(at)
	<-moved
	time.Sleep(time.Until(h.lastDue().Add(time.Second)))
	g.proxy.heal()
	t.Logf("%v healed; every timer is due", since(began))

	g.waitLeader(t, 30*time.Second)
	c := h.startConsumer(t, g.nsList)
	h.waitConsumed(t, g, 30*time.Second)
	_ = c.Shutdown()
	h.check(t)
	t.Logf("wall %v (the build before it excluded)", since(began))
}

// waitOtherLeader waits for a replica other than old to lead.
func (g *jepsenGroup) waitOtherLeader(t *testing.T, old int, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, r := range g.reps {
			r.mu.Lock()
			l := r.leader
			r.mu.Unlock()
			if l && i != old {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no replica but n%d leads within %v", old+1, d)
	return -1
}

// timerSend is one attempted timer send.
type timerSend struct {
	due          int64 // TIMER_DELIVER_MS
	acked, maybe bool  // maybe: failed or slow, the client may have sent it twice
}

// timerHistory is what the clients saw: the sends, and for each key the
// real-topic positions it was consumed at, with their store times.
type timerHistory struct {
	mu       sync.Mutex
	sent     map[string]*timerSend
	consumed map[string]map[[2]int64]int64
	due      time.Time // the latest delivery time sent
	// faults are the leaderless windows: from a fault to another
	// replica's election.
	faults [][2]int64
}

// fault records a leaderless window from at to now.
func (h *timerHistory) fault(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, [2]int64{at.UnixMilli(), time.Now().UnixMilli()})
}

// inFault reports whether ms falls in a leaderless window.
func (h *timerHistory) inFault(ms int64) bool {
	for _, f := range h.faults {
		if ms >= f[0] && ms <= f[1] {
			return true
		}
	}
	return false
}

// sendBatch sends n timer messages with 4 producers of one client,
// delivery times spread evenly over [first, first+spread).
func (h *timerHistory) sendBatch(t *testing.T, nsList, batch string, n int, first time.Time, spread time.Duration) {
	t.Helper()
	prod := startHistoryProducer(t, nsList, "jepsen-timer-pg", "jtp")
	if prod == nil {
		t.FailNow()
	}
	defer prod.Shutdown()
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				id := fmt.Sprintf("%s-%d", batch, i)
				due := first.Add(spread * time.Duration(i) / time.Duration(n))
				m := primitive.NewMessage("JepsenTopic", []byte("body-"+id))
				m.WithProperty("seq", id)
				m.WithKeys([]string{id})
				m.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(due.UnixMilli(), 10))
				rec := &timerSend{due: due.UnixMilli()}
				h.mu.Lock()
				h.sent[id] = rec
				if due.After(h.due) {
					h.due = due
				}
				h.mu.Unlock()
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := prod.SendSync(ctx, m)
				cancel()
				h.mu.Lock()
				rec.acked = err == nil && res.Status == primitive.SendOK
				rec.maybe = !rec.acked || time.Since(t0) >= sendTimeout
				h.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func (h *timerHistory) ackedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.sent {
		if r.acked {
			n++
		}
	}
	return n
}

func (h *timerHistory) lastDue() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.due
}

// startConsumer starts a push consumer of a new group that reads the
// real topic from its first offset (retried while the route is missing,
// as startJepsenConsumer).
func (h *timerHistory) startConsumer(t *testing.T, nsList string) interface{ Shutdown() error } {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := consumer.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver(strings.Split(nsList, ";"))),
			consumer.WithGroupName(instance("jepsen-timer-cg")), consumer.WithInstance(instance("jtc")),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Subscribe("JepsenTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, m := range msgs {
				id := m.GetProperty("seq")
				if h.consumed[id] == nil {
					h.consumed[id] = map[[2]int64]int64{}
				}
				// A redelivery of one position (the consumer's at-least-once)
				// is one entry: only a second position is a second delivery.
				h.consumed[id][[2]int64{int64(m.Queue.QueueId), m.QueueOffset}] = m.StoreTimestamp
			}
			return consumer.ConsumeSuccess, nil
		})
		if err == nil {
			if err = c.Start(); err == nil {
				return c
			}
		}
		_ = c.Shutdown()
		if time.Now().After(deadline) {
			t.Fatalf("timer consumer did not start within 30 s: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitConsumed waits until every acknowledged timer is consumed and the
// consumed positions are as many as the real topic holds on the leader
// (so that a second delivery, stored after the first, is read too).
func (h *timerHistory) waitConsumed(t *testing.T, g *jepsenGroup, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		l := g.waitLeader(t, d)
		var stored int64
		for _, v := range maxOffsets(g.reps[l].broker) {
			stored += v
		}
		h.mu.Lock()
		positions, missing := 0, 0
		for id, r := range h.sent {
			positions += len(h.consumed[id])
			if r.acked && len(h.consumed[id]) == 0 {
				missing++
			}
		}
		h.mu.Unlock()
		if missing == 0 && stored > 0 && int64(positions) >= stored {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("consumption did not finish within %v", d)
}

// check is the checker over the recorded history.
func (h *timerHistory) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var lost []string
	var late, steady []int64
	acked, positions, retried, early, dups := 0, 0, 0, 0, 0
	for id, r := range h.sent {
		pos := h.consumed[id]
		positions += len(pos)
		if r.acked {
			acked++
			if len(pos) == 0 {
				lost = append(lost, id)
			}
		}
		if len(pos) > 1 {
			if r.maybe {
				retried++
			} else {
				dups++
				t.Errorf("timer %s delivered %d times (positions %v), its send acknowledged at once", id, len(pos), pos)
			}
		}
		first := int64(-1)
		for p, ts := range pos {
			if ts < r.due {
				early++
				t.Errorf("timer %s stored at queue %d offset %d at %d, %d ms before its delivery time", id, p[0], p[1], ts, r.due-ts)
			}
			if first < 0 || ts < first {
				first = ts
			}
		}
		if first >= 0 {
			late = append(late, first-r.due)
			if !h.inFault(r.due) {
				steady = append(steady, first-r.due)
			}
		}
	}
	for id := range h.consumed {
		if h.sent[id] == nil {
			t.Errorf("consumed %q, which no producer sent (invented)", id)
		}
	}
	if acked == 0 {
		t.Fatal("no timer send was acknowledged")
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		t.Errorf("%d acknowledged timers never consumed (lost or never fired), e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	t.Logf("checker: %d timer sends, %d acknowledged, %d consumed distinct at %d positions; %d delivered twice, "+
		"%d stored twice after a client retry, %d early", len(h.sent), acked, len(h.consumed), positions, dups, retried, early)
	if len(late) > 0 {
		t.Logf("lateness (store time − delivery time), all %d: %s; the %d due outside the leaderless windows %v: %s",
			len(late), percentiles(late), len(steady), h.faults, percentiles(steady))
		// A timer due during an election is delivered once the new
		// leader's service runs: seconds, never the rest of the run.
		if m := slices.Max(late); m > 20_000 {
			t.Errorf("a timer was delivered %d ms after its time", m)
		}
	}
}

// percentiles returns p50, p99 and max of ms.
func percentiles(ms []int64) string {
	if len(ms) == 0 {
		return "none"
	}
	ms = slices.Sorted(slices.Values(ms))
	p := func(q float64) time.Duration {
		return time.Duration(ms[min(len(ms)-1, int(q*float64(len(ms))))]) * time.Millisecond
	}
	return fmt.Sprintf("p50 %v, p99 %v, max %v", p(0.5), p(0.99), p(1))
}
