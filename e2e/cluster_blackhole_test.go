package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestClusterBlackhole runs the README's topology on hosts that vanish
// instead of refusing (netlab_test.go): a 3-replica broker group
// (broker-j, each replica with its name server, one host each), a
// second broker group (broker-b, one broker on a fourth host) and a
// name server in the test's namespace, while official-client producers
// and a push consumer run. Its nemesis cycles through blackholeRounds:
//
//   - blackhole: every packet to and from the leader's host is dropped
//     until sends to broker-j resume, then it heals;
//   - pause: the leader is SIGSTOPped for 10 s, then SIGCONTinued;
//   - slow: 30% of the leader's packets are dropped for 10 s;
//   - silent name server: the test's name server is SIGSTOPped for 35 s
//     (it accepts connections and answers nothing).
//
// Each blackhole round prints when another replica was elected, when
// every healthy name server routed broker-j's brokerId 0 to it (target,
// asserted: within 5 s of the election) and when a send to broker-j was
// next acknowledged (target: within the client's 30 s route refresh,
// 35 s; asserted: within one route refresh after the routing, since the
// client's refresh timer, not the group, sets when it looks).
// With two broker groups no send may fail: the client sends to the other
// group while one has no leader. The Jepsen checker of TestClusterJepsen
// then checks the history, and the replicas' CommitLogs are compared.
//
// The replicas run the default Raft timeouts, and the test prints how
// many elections there were beside the faults that take the leader away
// (a leader that steps down under load alone shows as more).
//
// It needs root, iproute2 and nftables, and runs only when
// ROCKETSTORE_BLACKHOLE_ROUNDS is set: CI runs 5 (one cycle, two
// blackholes); the soak is ROCKETSTORE_BLACKHOLE_ROUNDS=15.
func TestClusterBlackhole(t *testing.T) {
	v := os.Getenv("ROCKETSTORE_BLACKHOLE_ROUNDS")
	if v == "" {
		t.Skip("set ROCKETSTORE_BLACKHOLE_ROUNDS=N to run (needs root, iproute2 and nftables)")
	}
	rounds, err := strconv.Atoi(v)
	if err != nil || rounds < 1 {
		t.Fatalf("ROCKETSTORE_BLACKHOLE_ROUNDS=%q is not a positive number", v)
	}
	bin := buildRocketstore(t)
	began := time.Now()
	lab := newNetLab(t, 4)
	bh := startBlackholeTopology(t, bin, lab)
	g := bh.g
	g.waitLeader(t, 60*time.Second)

	h := &history{sent: map[string]*sendRec{}, consumed: map[string]map[[2]int64]bool{}}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	for p := range 2 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			runGroupsProducer(t, bh.nsList, p, h, stop)
		}()
	}
	if h.firstSuccessAfter(began.Add(-time.Hour), 100*time.Second) >= 100*time.Second+time.Hour {
		t.Fatal("no send to broker-j acknowledged within 100 s")
	}
	t.Logf("%v first send to broker-j acknowledged", since(began))
	c := startGroupsConsumer(t, bh.nsList, h)
	time.Sleep(3 * time.Second)

	var toRoute, toSend []time.Duration
	takenAway, missed := 0, 0 // rounds that blackhole or pause the leader; rounds over 35 s
	for k := range rounds {
		l := g.waitLeader(t, 60*time.Second)
		switch kind := blackholeRounds[k%len(blackholeRounds)]; kind {
		case "blackhole":
			takenAway++
			lab.drop(l, 100)
			at := time.Now() // the rules are in place: nothing reaches the old leader after this
			t.Logf("%v round %d: blackhole leader n%d's host", since(began), k+1, l+1)
			elected, routed := bh.waitRouted(t, l, at)
			sent := h.firstSuccessAfter(at, 60*time.Second)
			met := "met"
			if sent > 35*time.Second {
				met, missed = "missed", missed+1
			}
			t.Logf("round %d: elected %v after the fault; every healthy name server routed it %v after the election; "+
				"first send to broker-j acknowledged %v after the fault (35 s target %s)", k+1, elected.Round(time.Millisecond),
				routed.Round(time.Millisecond), sent.Round(time.Millisecond), met)
			toRoute, toSend = append(toRoute, routed), append(toSend, sent)
			if routed > 5*time.Second {
				t.Errorf("round %d: the new leader was routable %v after its election (target 5 s)", k+1, routed)
			}
			// The client refreshes its routes every 30 s, asking the
			// name servers in turn (one may be the vanished host's: a 3 s
			// timeout), and its first send after that may have started
			// toward the old leader (a 3 s send timeout).
			if limit := elected + routed + 30*time.Second + 3*time.Second + sendTimeout; sent > limit {
				t.Errorf("round %d: sends to broker-j resumed %v after the fault, more than one route refresh after "+
					"the new leader was routed (%v)", k+1, sent, limit)
			}
			lab.heal(l)
		case "pause":
			takenAway++
			t.Logf("%v round %d: SIGSTOP leader n%d for 10 s", since(began), k+1, l+1)
			g.signal(l, syscall.SIGSTOP)
			time.Sleep(10 * time.Second)
			g.signal(l, syscall.SIGCONT)
		case "slow":
			t.Logf("%v round %d: drop 30%% of leader n%d's packets for 10 s", since(began), k+1, l+1)
			lab.drop(l, 30)
			time.Sleep(10 * time.Second)
			lab.heal(l)
		case "silent name server":
			// Longer than the clients' 30 s route refresh, so that
			// they ask it at least once.
			t.Logf("%v round %d: SIGSTOP the test's name server for 35 s", since(began), k+1)
			_ = bh.ns.Signal(syscall.SIGSTOP)
			time.Sleep(35 * time.Second)
			_ = bh.ns.Signal(syscall.SIGCONT)
		}
		g.waitLeader(t, 60*time.Second)
		time.Sleep(3 * time.Second)
	}
	close(stop)
	pwg.Wait()
	t.Logf("%v producers stopped", since(began))
	acked := h.ackedIDs()
	deadline := time.Now().Add(90 * time.Second)
	for len(h.missing(acked)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	_ = c.Shutdown()
	h.check(t, acked)
	failed := h.failedCount()
	if failed > 0 {
		t.Errorf("%d sends failed with two broker groups (target 0)", failed)
	}
	g.converge(t, 60*time.Second)
	ends := g.stopAll(t)
	g.compareCommitLogs(t, ends)
	if len(toRoute) > 0 {
		slices.Sort(toRoute)
		slices.Sort(toSend)
		t.Logf("blackhole rounds %d: election → routable from every healthy name server min %v median %v max %v; "+
			"fault → first send to broker-j min %v median %v max %v", len(toRoute),
			toRoute[0].Round(time.Millisecond), toRoute[len(toRoute)/2].Round(time.Millisecond), toRoute[len(toRoute)-1].Round(time.Millisecond),
			toSend[0].Round(time.Millisecond), toSend[len(toSend)/2].Round(time.Millisecond), toSend[len(toSend)-1].Round(time.Millisecond))
	}
	t.Logf("history: %d sends attempted, %d acknowledged, %d failed, %d consumed distinct", h.attempted(), len(acked), failed, h.consumedCount())
	t.Logf("elections: %d (expected: the first, and one each for the %d rounds that blackholed or paused the leader)",
		g.elections(), takenAway)
	if len(toSend) > 0 {
		t.Logf("blackhole rounds with sends to broker-j resumed within 35 s: %d of %d", len(toSend)-missed, len(toSend))
	}
}

// blackholeRounds is the nemesis's cycle of faults.
var blackholeRounds = []string{"blackhole", "pause", "blackhole", "slow", "silent name server"}

// elections counts how often a replica logged that it leads.
func (g *jepsenGroup) elections() int {
	n := 0
	for _, r := range g.reps {
		b, _ := os.ReadFile(r.dir + ".log")
		n += strings.Count(string(b), `msg="leading the broker group"`)
	}
	return n
}

// blackholeTopology is the broker group of lab hosts 0-2, the broker of
// host 3 and the name server of the test's namespace.
type blackholeTopology struct {
	g      *jepsenGroup
	ns     *os.Process // the test's name server
	nsAddr []string    // every name server, replica i's at i, the test's last
	nsList string
}

func startBlackholeTopology(t *testing.T, bin string, lab *netLab) *blackholeTopology {
	const nsPort, brokerPort, raftPort = 9876, 10911, 7800
	bh := &blackholeTopology{g: &jepsenGroup{bin: bin, lab: lab}}
	var peers []string
	for i := range 3 {
		bh.nsAddr = append(bh.nsAddr, fmt.Sprintf("%s:%d", lab.ips[i], nsPort))
		peers = append(peers, fmt.Sprintf("n%d@%s:%d", i+1, lab.ips[i], raftPort))
	}
	bh.nsAddr = append(bh.nsAddr, fmt.Sprintf("%s:%d", lab.gw, freePort(t, lab.gw)))
	bh.nsList = strings.Join(bh.nsAddr, ";")
	root := t.TempDir()

	ns := exec.Command(bin, "serve", "--role", "namesrv", "--listen", bh.nsAddr[3])
	nsLog, err := os.Create(filepath.Join(root, "namesrv.log"))
	if err != nil {
		t.Fatal(err)
	}
	ns.Stdout, ns.Stderr = nsLog, nsLog
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	bh.ns = ns.Process
	t.Cleanup(func() {
		_ = ns.Process.Signal(syscall.SIGCONT)
		_ = ns.Process.Kill()
		_ = ns.Wait()
		_ = nsLog.Close()
	})

	for i := range 3 {
		r := &replica{dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)), cfg: filepath.Join(root, fmt.Sprintf("n%d.yaml", i+1)),
			ns: bh.nsAddr[i], broker: fmt.Sprintf("%s:%d", lab.ips[i], brokerPort)}
		r.log = r.dir + ".log"
		conf := fmt.Sprintf(`brokerName: broker-j
brokerIP1: %s
listenPort: %d
namesrvAddr: %s
flushDiskType: SYNC_FLUSH
mapedFileSizeCommitLog: 4194304
maxHashSlotNum: 10000
maxIndexNum: 40000
raft:
  nodeId: n%d
  bind: %s:%d
  peers: [%s]
`, lab.ips[i], brokerPort, bh.nsList, i+1, lab.ips[i], raftPort, strings.Join(peers, ", "))
		if err := os.WriteFile(r.cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		bh.g.reps = append(bh.g.reps, r)
	}
	for i := range 3 {
		bh.g.start(t, i)
	}
	t.Cleanup(func() {
		bh.g.checkAlive(t)
		for i := range bh.g.reps {
			bh.g.signal(i, syscall.SIGCONT)
			bh.g.kill(i)
		}
		bh.g.keepLogs(t)
	})

	// broker-b: one broker, no replication, on host 3.
	bconf := filepath.Join(root, "b.yaml")
	if err := os.WriteFile(bconf, []byte(fmt.Sprintf("brokerName: broker-b\nbrokerIP1: %s\nlistenPort: %d\nnamesrvAddr: %s\n"+
		"mapedFileSizeCommitLog: 4194304\nmaxHashSlotNum: 10000\nmaxIndexNum: 40000\n",
		lab.ips[3], brokerPort, bh.nsList)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := lab.command(3, bin, "serve", "--role", "broker", "--dir", filepath.Join(root, "b"), "--config", bconf)
	bLog, err := os.Create(filepath.Join(root, "b.log"))
	if err != nil {
		t.Fatal(err)
	}
	b.Stdout, b.Stderr = bLog, bLog
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Process.Kill()
		_ = b.Wait()
		_ = bLog.Close()
	})
	return bh
}

// signal sends sig to replica i's process, if it runs.
func (g *jepsenGroup) signal(i int, sig syscall.Signal) {
	r := g.reps[i]
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// waitRouted waits for a replica other than old to lead, then for every
// name server not on old's host, the test's excepted (it is stopped), to
// route broker-j's brokerId 0 to it; it returns how long after at the
// replica was elected and how long after its election the last name
// server routed it (60 s each when that does not happen by then).
func (bh *blackholeTopology) waitRouted(t *testing.T, old int, at time.Time) (elected, routed time.Duration) {
	t.Helper()
	g := bh.g
	var leader int
	var leaderAt time.Time
	for leader = -1; leader < 0 && time.Since(at) < 60*time.Second; {
		for i, r := range g.reps {
			r.mu.Lock()
			if i != old && r.leader {
				leader, leaderAt = i, r.leaderAt
			}
			r.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader < 0 {
		return 60 * time.Second, 60 * time.Second
	}
	want := g.reps[leader].broker
	for i := range 3 {
		if i == old {
			continue
		}
		for {
			if m, _ := routedMasterOf(bh.nsAddr[i], "broker-j"); m == want {
				break
			}
			if time.Since(leaderAt) > 60*time.Second {
				return leaderAt.Sub(at), 60 * time.Second
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return leaderAt.Sub(at), time.Since(leaderAt)
}

// brokerQueue is a queue id unique across the two broker groups, for the
// checker's positions.
func brokerQueue(broker string, queue int) int64 {
	if broker == "broker-b" {
		return 1000 + int64(queue)
	}
	return int64(queue)
}

// runGroupsProducer is runProducer over two broker groups: it records
// each acknowledged position with its group, and as okSends only the
// sends acknowledged by broker-j, whose leader the nemesis attacks.
func runGroupsProducer(t *testing.T, nsList string, p int, h *history, stop chan struct{}) {
	prod := startHistoryProducer(t, nsList, "bh-pg", "bp")
	if prod == nil {
		return
	}
	defer prod.Shutdown()
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		id := fmt.Sprintf("p%d-%d", p, seq)
		m := primitive.NewMessage("JepsenTopic", []byte("body-"+id))
		m.WithProperty("seq", id)
		rec := &sendRec{}
		h.mu.Lock()
		h.sent[id] = rec
		h.mu.Unlock()
		t0, retries := time.Now(), clientRetries.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := prod.SendSync(ctx, m)
		cancel()
		h.mu.Lock()
		rec.finished, rec.slow = time.Now(), time.Since(t0) >= sendTimeout
		rec.retried = clientRetries.Load() != retries
		if err == nil && res.Status == primitive.SendOK {
			rec.acked, rec.queue, rec.offset = true, brokerQueue(res.MessageQueue.BrokerName, res.MessageQueue.QueueId), res.QueueOffset
			if res.MessageQueue.BrokerName == "broker-j" {
				h.okSends = append(h.okSends, [2]time.Time{t0, rec.finished})
			}
		} else {
			rec.failed = true
		}
		h.mu.Unlock()
		if rec.failed {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// startGroupsConsumer is startJepsenConsumer over two broker groups.
func startGroupsConsumer(t *testing.T, nsList string, h *history) interface{ Shutdown() error } {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := consumer.NewPushConsumer(
			consumer.WithNsResolver(primitive.NewPassthroughResolver(strings.Split(nsList, ";"))),
			consumer.WithGroupName("bh-cg"), consumer.WithInstance(instance("bc")),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
		if err == nil {
			err = c.Subscribe("JepsenTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				h.mu.Lock()
				defer h.mu.Unlock()
				for _, m := range msgs {
					id := m.GetProperty("seq")
					if h.consumed[id] == nil {
						h.consumed[id] = map[[2]int64]bool{}
					}
					h.consumed[id][[2]int64{brokerQueue(m.Queue.BrokerName, m.Queue.QueueId), m.QueueOffset}] = true
				}
				return consumer.ConsumeSuccess, nil
			})
			if err == nil {
				err = c.Start()
			}
			if err == nil {
				return c
			}
			_ = c.Shutdown()
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not start within a minute: %v", err)
		}
		time.Sleep(time.Second)
	}
}

func (h *history) failedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.sent {
		if r.failed {
			n++
		}
	}
	return n
}
