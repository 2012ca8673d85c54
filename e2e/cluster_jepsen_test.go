package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/internal/testport"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// TestClusterJepsen runs a 3-replica broker group as three `rocketstore
// serve` processes while official-client producers (SendSync) and a push
// consumer run, and a nemesis SIGKILLs the leader, SIGKILLs a follower
// and partitions the leader from the majority (a fault-injecting TCP
// proxy in front of each replica's Raft port), restarting and healing
// after each. Then it checks the history: every acknowledged message was
// consumed, nothing invented, no two messages at one queue offset, each
// acknowledged position holds its message, messages stored twice only
// for sends that failed or timed out (the client's own retry); and the
// replicas' CommitLogs are byte-identical up to the shortest one and
// `rocketstore verify` is clean on each. It reports the failover times
// (fault → first successful send). The replicas snapshot every 200
// entries and keep 50, so that log compaction, and catching a restarted
// replica up from the leader's CommitLog, happen in every run.
//
// The Raft ports run mutual TLS (raft.tls; ROCKETSTORE_JEPSEN_TLS=0 for
// plain TCP). CI runs 3 faults; ROCKETSTORE_JEPSEN_FAULTS=12 (or more)
// is the soak: 4 of each fault.
func TestClusterJepsen(t *testing.T) {
	faults := 3
	if v := os.Getenv("ROCKETSTORE_JEPSEN_FAULTS"); v != "" {
		var err error
		if faults, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildRocketstore(t)
	t.Logf("%d faults, Raft over TLS: %v", faults, jepsenTLS())
	began := time.Now()
	g := startJepsenGroup(t, bin, nil)
	// Producers start once a leader is elected: a client whose first route
	// look-up finds no master retries only at its 30 s route refresh.
	g.waitLeader(t, 60*time.Second)

	h := &history{sent: map[string]*sendRec{}, consumed: map[string]map[[2]int64]bool{}}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	for p := range 2 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			runProducer(t, g.nsList, p, h, stop)
		}()
	}

	// The first send creates the topic, which the consumer subscribes to.
	// Up to three of the client's 30 s route refreshes: the leader must
	// also register with the name servers and create the topic.
	if start := time.Now(); h.firstSuccessAfter(start.Add(-time.Hour), 100*time.Second) >= 100*time.Second+time.Hour {
		t.Fatal("no send acknowledged within 100 s")
	}
	t.Logf("%v first send acknowledged", since(began))
	c := startJepsenConsumer(t, g.nsList, h)
	time.Sleep(3 * time.Second)
	var failovers, routed []time.Duration
	for k := range faults {
		l := g.waitLeader(t, 30*time.Second)
		switch k % 3 {
		case 0:
			t.Logf("%v fault %d: SIGKILL leader n%d", since(began), k+1, l+1)
			at := time.Now()
			g.kill(l)
			moved := g.watchRoutes(at, l)
			failovers = append(failovers, h.firstSuccessAfter(at, 60*time.Second))
			routed = append(routed, <-moved)
			g.start(t, l)
		case 1:
			f := (l + 1) % 3
			t.Logf("%v fault %d: SIGKILL follower n%d", since(began), k+1, f+1)
			g.kill(f)
			time.Sleep(3 * time.Second)
			g.start(t, f)
		case 2:
			t.Logf("%v fault %d: partition leader n%d from the majority", since(began), k+1, l+1)
			at := time.Now()
			g.proxy.isolate(l, 3)
			moved := g.watchRoutes(at, l)
			failovers = append(failovers, h.firstSuccessAfter(at, 60*time.Second))
			routed = append(routed, <-moved)
			g.proxy.heal()
		}
		time.Sleep(2 * time.Second)
	}
	close(stop)
	pwg.Wait()
	g.proxy.heal()
	g.waitLeader(t, 30*time.Second)

	t.Logf("%v producers stopped", since(began))
	acked := h.ackedIDs()
	deadline := time.Now().Add(90 * time.Second)
	for len(h.missing(acked)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%v acknowledged sends consumed", since(began))
	_ = c.Shutdown()
	h.check(t, acked)

	g.converge(t, 60*time.Second)
	ends := g.stopAll(t)
	if slices.Min(ends) != slices.Max(ends) {
		t.Errorf("replicas that converged end at different CommitLog offsets: %v", ends)
	}
	g.compareCommitLogs(t, ends)
	g.reportSnapshots(t)
	for i := range g.reps {
		out, err := exec.Command(bin, "verify", "--dir", g.reps[i].dir).CombinedOutput()
		if err != nil {
			t.Errorf("verify n%d: %v\n%s", i+1, err, out)
		}
	}
	checkRaftTLSLogs(t, g)
	slices.Sort(failovers)
	slices.Sort(routed)
	if len(failovers) > 0 {
		t.Logf("failover (fault → first successful send), %d faults %v: p50 %v, max %v", len(failovers), failovers,
			failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond))
		t.Logf("routes moved (fault → every name server names another replica brokerId 0), %v: p50 %v, max %v "+
			"(the client sends there at its next 30 s route refresh)", routed,
			routed[len(routed)/2].Round(time.Millisecond), routed[len(routed)-1].Round(time.Millisecond))
	}
	t.Logf("history: %d sends attempted, %d acknowledged, %d consumed distinct", h.attempted(), len(acked), h.consumedCount())
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// buildRocketstore builds the command from the parent module.
func buildRocketstore(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rocketstore")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/rocketstore")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build rocketstore: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a port that ip:port can listen on, reserved for this
// test process outside the ephemeral range: the replicas bind their ports
// again after every restart.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	return testport.Port(t, ip)
}

type replica struct {
	dir, cfg, ns string
	log          string // its serve log, off the store's file system
	broker       string
	mu           sync.Mutex
	cmd          *exec.Cmd
	exited       chan struct{}
	leader       bool
	// leaderAt is when the replica last logged that it leads.
	leaderAt time.Time
	// stopping is set before the test kills or stops the process; an
	// exit without it (a restart that failed) is recorded in died.
	stopping bool
	died     []string
}

type jepsenGroup struct {
	bin    string
	lab    *netLab // nil: the replicas share the test's network namespace
	reps   []*replica
	proxy  *faultProxy
	nsList string
}

// startJepsenGroup starts the group; dirs, when not nil, are the
// replicas' store directories (the power-cut test puts each on its own
// LazyFS). The logs stay beside the default directories either way.
func startJepsenGroup(t *testing.T, bin string, dirs []string) *jepsenGroup {
	return startJepsenGroupConf(t, bin, dirs, "")
}

// startJepsenGroupConf starts the group with extra top-level lines in
// each replica's broker config.
func startJepsenGroupConf(t *testing.T, bin string, dirs []string, extra string) *jepsenGroup {
	g := &jepsenGroup{bin: bin}
	var binds []string
	src := map[string]int{}
	for i := range 3 {
		ip := fmt.Sprintf("127.0.0.%d", 11+i)
		binds = append(binds, fmt.Sprintf("%s:%d", ip, freePort(t, ip)))
		src[ip] = i
	}
	var proxies []string
	g.proxy, proxies = newFaultProxy(t, binds, src)
	var ns, peers []string
	for i := range 3 {
		ns = append(ns, fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1")))
		peers = append(peers, fmt.Sprintf("n%d@%s", i+1, proxies[i]))
	}
	g.nsList = strings.Join(ns, ";")
	root := t.TempDir()
	for i := range 3 {
		r := &replica{dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)), cfg: filepath.Join(root, fmt.Sprintf("n%d.yaml", i+1)), ns: ns[i]}
		r.log = r.dir + ".log"
		if dirs != nil {
			r.dir = dirs[i]
		}
		port := freePort(t, "127.0.0.1")
		r.broker = fmt.Sprintf("127.0.0.1:%d", port)
		conf := extra + fmt.Sprintf(`brokerName: broker-j
listenPort: %d
namesrvAddr: %s
flushDiskType: SYNC_FLUSH
mapedFileSizeCommitLog: 4194304
raft:
  nodeId: n%d
  bind: %s
  peers: [%s]
  heartbeatTimeoutMs: 2000
  electionTimeoutMs: 2000
  snapshotThreshold: 200
  snapshotIntervalMs: 2000
  trailingLogs: 50
`, port, g.nsList, i+1, binds[i], strings.Join(peers, ", "))
		if jepsenTLS() {
			conf += raftTLSSection(t, root, fmt.Sprintf("n%d", i+1))
		}
		if err := os.WriteFile(r.cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		g.reps = append(g.reps, r)
	}
	for i := range 3 {
		g.start(t, i)
	}
	t.Cleanup(func() {
		g.checkAlive(t) // also when the test stopped early
		for i := range g.reps {
			g.kill(i)
		}
		g.keepLogs(t)
	})
	return g
}

// start runs replica i; its log goes to DIR.log and tells its role.
func (g *jepsenGroup) start(t *testing.T, i int) {
	r := g.reps[i]
	f, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(g.bin, "serve", "--dir", r.dir, "--listen", r.ns, "--config", r.cfg)
	if g.lab != nil { // replica i runs as lab host i
		cmd = g.lab.command(i, g.bin, "serve", "--dir", r.dir, "--listen", r.ns, "--config", r.cfg)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	exited := make(chan struct{})
	drained := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.exited, r.leader, r.stopping = cmd, exited, false, false
	r.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = f.WriteString(line + "\n")
			switch {
			case strings.Contains(line, `msg="leading the broker group"`):
				r.setLeader(cmd, true)
			case strings.Contains(line, "msg=following"):
				r.setLeader(cmd, false)
			}
		}
		_ = pr.Close()
		close(drained)
	}()
	go func() {
		err := cmd.Wait()
		<-drained // the process's last words (a panic, a start error) reach the log
		r.mu.Lock()
		if r.cmd == cmd && !r.stopping {
			r.died = append(r.died, fmt.Sprintf("exited by itself at %s: %v", time.Now().Format(time.TimeOnly), err))
		}
		r.mu.Unlock()
		r.setLeader(cmd, false)
		_ = f.Close()
		close(exited)
	}()
}

// keepLogs copies each replica's log to ROCKETSTORE_JEPSEN_LOGDIR when
// set and, when the test failed, shows the end of each (the directories
// are removed with the test).
func (g *jepsenGroup) keepLogs(t *testing.T) {
	for i, r := range g.reps {
		b, _ := os.ReadFile(r.log)
		if keep := os.Getenv("ROCKETSTORE_JEPSEN_LOGDIR"); keep != "" {
			_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("n%d.log", i+1)), b, 0o644)
		}
		if !t.Failed() {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		t.Logf("n%d log, last %d of %d lines:\n%s", i+1, min(60, len(lines)), len(lines), strings.Join(lines[max(0, len(lines)-60):], "\n"))
	}
}

func (r *replica) setLeader(cmd *exec.Cmd, v bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == cmd {
		if v && !r.leader {
			r.leaderAt = time.Now()
		}
		r.leader = v
	}
}

// expectExit marks replica i as stopping, so that its exit is not
// reported as a death of its own (a power cut kills its disk first).
func (g *jepsenGroup) expectExit(i int) {
	r := g.reps[i]
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
}

// kill SIGKILLs replica i and waits for it to exit.
func (g *jepsenGroup) kill(i int) {
	r := g.reps[i]
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.leader, r.stopping = false, true
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

func (g *jepsenGroup) waitLeader(t *testing.T, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for i, r := range g.reps {
			r.mu.Lock()
			l := r.leader
			r.mu.Unlock()
			if l {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no leader within %v", d)
	return -1
}

// converge waits until every replica reports the same max offset for
// each queue of the test topic (GET_MAX_OFFSET to each broker).
func (g *jepsenGroup) converge(t *testing.T, d time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	var last [][]int64
	for time.Now().Before(deadline) {
		last = nil
		for _, r := range g.reps {
			last = append(last, maxOffsets(r.broker))
		}
		if slices.Equal(last[0], last[1]) && slices.Equal(last[0], last[2]) && last[0] != nil {
			t.Logf("replicas converged in %v", time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("replicas did not converge within %v: max offsets %v", d, last)
}

// checkAlive fails the test for every replica process that exited
// without being killed or stopped (a failed start or a crash).
func (g *jepsenGroup) checkAlive(t *testing.T) {
	t.Helper()
	for i, r := range g.reps {
		r.mu.Lock()
		died := slices.Clone(r.died)
		r.mu.Unlock()
		for _, d := range died {
			t.Errorf("n%d %s (see its log)", i+1, d)
		}
	}
}

// watchRoutes reports, on the channel, how long after at every name
// server that answers routes JepsenTopic's brokerId 0 to a replica other
// than old (60 s when that does not happen by then).
func (g *jepsenGroup) watchRoutes(at time.Time, old int) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		for time.Since(at) < 60*time.Second {
			answered, moved := 0, 0
			for _, r := range g.reps {
				m, ok := routedMaster(r.ns)
				if !ok {
					continue
				}
				answered++
				if m != "" && m != g.reps[old].broker {
					moved++
				}
			}
			if answered > 0 && moved == answered {
				ch <- time.Since(at)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		ch <- time.Since(at)
	}()
	return ch
}

// routedMaster returns the brokerId 0 address a name server routes
// JepsenTopic to (ok false when it does not answer).
func routedMaster(ns string) (string, bool) { return routedMasterOf(ns, "") }

// routedMasterOf returns the brokerId 0 address of broker group name
// (the first group when name is "") in a name server's route of
// JepsenTopic (ok false when it does not answer).
func routedMasterOf(ns, name string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, ns, remoting.ClientOptions{})
	if err != nil {
		return "", false
	}
	defer cl.Close()
	req := remoting.NewRequest(remoting.CodeGetRouteInfoByTopic, nil)
	req.SetExt("topic", "JepsenTopic")
	resp, err := cl.Invoke(ctx, req)
	if err != nil || resp.Code != remoting.CodeSuccess {
		return "", false
	}
	var rd struct {
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if json.Unmarshal(resp.Body, &rd) != nil || len(rd.BrokerDatas) == 0 {
		return "", true
	}
	for _, bd := range rd.BrokerDatas {
		if name == "" || bd.BrokerName == name {
			return bd.BrokerAddrs["0"], true
		}
	}
	return "", true
}

// maxOffsets asks a broker for the max offset of JepsenTopic's queues
// 0-7 (nil when it does not answer).
func maxOffsets(addr string) []int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		return nil
	}
	defer cl.Close()
	var out []int64
	for q := range 8 {
		req := remoting.NewRequest(remoting.CodeGetMaxOffset, nil)
		req.SetExt("topic", "JepsenTopic")
		req.SetExtInt("queueId", int64(q))
		resp, err := cl.Invoke(ctx, req)
		if err != nil {
			return nil
		}
		v, _ := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		out = append(out, v)
	}
	return out
}

// stopAll stops every replica gracefully and returns where each one's
// CommitLog ends.
func (g *jepsenGroup) stopAll(t *testing.T) []int64 {
	var ends []int64
	for i, r := range g.reps {
		r.mu.Lock()
		cmd, exited := r.cmd, r.exited
		r.stopping = true
		r.mu.Unlock()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("n%d did not stop on SIGTERM", i+1)
			g.kill(i)
		}
		ends = append(ends, commitLogEnd(t, filepath.Join(r.dir, "commitlog")))
	}
	return ends
}

// reportSnapshots logs the snapshots each replica took and installed
// (the config makes them frequent, so that compaction and catching up
// from the leader's CommitLog are part of every run).
func (g *jepsenGroup) reportSnapshots(t *testing.T) {
	taken := 0
	var parts []string
	for i, r := range g.reps {
		metas, _ := filepath.Glob(filepath.Join(r.dir, "raft", "snapshots", "*.meta"))
		b, _ := os.ReadFile(r.log)
		installed := strings.Count(string(b), "installed a snapshot of the leader's CommitLog")
		taken += len(metas)
		parts = append(parts, fmt.Sprintf("n%d: %d kept, %d installed", i+1, len(metas), installed))
	}
	t.Logf("snapshots: %s", strings.Join(parts, "; "))
	if taken == 0 {
		t.Errorf("no replica took a snapshot (snapshotThreshold 200): compaction was not exercised")
	}
}

// commitLogEnd walks the records of a CommitLog directory.
func commitLogEnd(t *testing.T, dir string) int64 {
	t.Helper()
	data := readCommitLog(t, dir)
	var pos int64
	const fileSize = 4 << 20
	for pos+8 <= int64(len(data)) {
		info, err := record.Check(data[pos:], pos, true)
		if err != nil {
			break
		}
		if info.Blank {
			pos += fileSize - pos%fileSize
			continue
		}
		pos += int64(info.Size)
	}
	return pos
}

func readCommitLog(t *testing.T, dir string) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "0*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// compareCommitLogs compares the replicas' CommitLogs byte for byte up
// to the shortest.
func (g *jepsenGroup) compareCommitLogs(t *testing.T, ends []int64) {
	short := slices.Min(ends)
	if short == 0 {
		t.Fatalf("empty CommitLog (ends %v)", ends)
	}
	ref := readCommitLog(t, filepath.Join(g.reps[0].dir, "commitlog"))[:short]
	for i := 1; i < len(g.reps); i++ {
		b := readCommitLog(t, filepath.Join(g.reps[i].dir, "commitlog"))[:short]
		if !bytes.Equal(ref, b) {
			for j := range ref {
				if ref[j] != b[j] {
					t.Fatalf("CommitLogs of n1 and n%d differ at offset %d (ends %v)", i+1, j, ends)
				}
			}
		}
	}
	t.Logf("CommitLogs byte-identical up to %d (ends %v)", short, ends)
}

// sendRec is one attempted send.
type sendRec struct {
	acked    bool
	failed   bool
	slow     bool // took at least the client's send timeout: it may have retried
	retried  bool // the client retried a send while this one was under way: it may have been this one
	queue    int64
	offset   int64
	finished time.Time
}

// history is what the clients saw.
type history struct {
	mu       sync.Mutex
	sent     map[string]*sendRec
	consumed map[string]map[[2]int64]bool
	// okSends is when each acknowledged send started and finished.
	okSends [][2]time.Time
}

const sendTimeout = 3 * time.Second

// startHistoryProducer starts an official-client producer of the
// history's sends (group and instance names made unique to the run), or
// reports the error and returns nil.
func startHistoryProducer(t *testing.T, nsList, group, inst string) rocketmq.Producer {
	prod, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(strings.Split(nsList, ";"))),
		producer.WithGroupName(instance(group)), producer.WithInstanceName(instance(inst)),
		producer.WithRetry(2), producer.WithSendMsgTimeout(sendTimeout))
	if err != nil {
		t.Error(err)
		return nil
	}
	if err := prod.Start(); err != nil {
		t.Error(err)
		return nil
	}
	return prod
}

func runProducer(t *testing.T, nsList string, p int, h *history, stop chan struct{}) {
	prod := startHistoryProducer(t, nsList, "jepsen-pg", "jp")
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
		m.WithKeys([]string{id})
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
			rec.acked, rec.queue, rec.offset = true, int64(res.MessageQueue.QueueId), res.QueueOffset
			h.okSends = append(h.okSends, [2]time.Time{t0, rec.finished})
		} else {
			rec.failed = true
		}
		h.mu.Unlock()
		if rec.failed {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// startJepsenConsumer starts the push consumer. The client's Start fails
// when the name server it asks has no route for the topic yet (the first
// send created it a moment ago), so it is retried for up to a minute.
func startJepsenConsumer(t *testing.T, nsList string, h *history) interface{ Shutdown() error } {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := tryJepsenConsumer(nsList, h)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not start within a minute: %v", err)
		}
		t.Logf("consumer start: %v; again", err)
		time.Sleep(time.Second)
	}
}

func tryJepsenConsumer(nsList string, h *history) (interface{ Shutdown() error }, error) {
	c, err := consumer.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(strings.Split(nsList, ";"))),
		consumer.WithGroupName("jepsen-cg"), consumer.WithInstance(instance("jc")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return nil, err
	}
	err = c.Subscribe("JepsenTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, m := range msgs {
			id := m.GetProperty("seq")
			if h.consumed[id] == nil {
				h.consumed[id] = map[[2]int64]bool{}
			}
			h.consumed[id][[2]int64{int64(m.Queue.QueueId), m.QueueOffset}] = true
		}
		return consumer.ConsumeSuccess, nil
	})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		_ = c.Shutdown()
		return nil, err
	}
	return c, nil
}

// firstSuccessAfter waits for the first acknowledged send that started
// after at (a send in flight at the fault may be acknowledged just after
// it by the old leader) and returns how long after at it was answered.
func (h *history) firstSuccessAfter(at time.Time, limit time.Duration) time.Duration {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, s := range h.okSends {
			if !s[0].Before(at) {
				h.mu.Unlock()
				return s[1].Sub(at)
			}
		}
		h.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(at)
}

func (h *history) ackedIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id, r := range h.sent {
		if r.acked {
			ids = append(ids, id)
		}
	}
	return ids
}

func (h *history) missing(ids []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, id := range ids {
		if len(h.consumed[id]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (h *history) attempted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sent)
}

func (h *history) consumedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.consumed)
}

// check is the checker over the recorded history.
func (h *history) check(t *testing.T, acked []string) {
	t.Helper()
	if len(acked) == 0 {
		t.Fatal("no send was acknowledged")
	}
	if lost := h.missing(acked); len(lost) > 0 {
		sort.Strings(lost)
		t.Errorf("%d acknowledged messages never consumed (lost), e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	at := map[[2]int64]string{}
	dups := 0
	for id, pos := range h.consumed {
		r, ok := h.sent[id]
		if !ok {
			t.Errorf("consumed %q, which no producer sent (invented)", id)
			continue
		}
		for p := range pos {
			if other, ok := at[p]; ok && other != id {
				t.Errorf("queue %d offset %d holds %q and %q (replicas disagree)", p[0], p[1], other, id)
			}
			at[p] = id
		}
		if r.acked && !pos[[2]int64{r.queue, r.offset}] {
			t.Errorf("%q acknowledged at queue %d offset %d, consumed at %v", id, r.queue, r.offset, pos)
		}
		if len(pos) > 1 {
			dups++
			if !r.failed && !r.slow && !r.retried {
				t.Errorf("%q stored %d times though its send was acknowledged at once and no client retried meanwhile", id, len(pos))
			}
		}
	}
	t.Logf("checker: %d positions consumed, %d messages stored more than once (client retries after a lost ack)", len(at), dups)
}
