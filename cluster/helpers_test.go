package cluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/testport"
)

// TestMain checks that no goroutine outlives the tests but the waiters of
// futures that Raft abandoned at a shutdown (Node.await): the power cuts
// shut nodes down while their rounds are queued in Raft. The long tests
// run in parallel, four at a time unless -parallel says otherwise: they
// spend most of their time waiting on Raft's timeouts, not on a core.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/rocketstore/rocketstore/cluster.(*Node).await.func1"))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// logger is quiet unless CLUSTER_TEST_LOG is set.
func logger() *slog.Logger {
	if os.Getenv("CLUSTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return quiet
}

// testLogStore is the Raft log store the tests' groups use:
// CLUSTER_TEST_LOG_STORE (wal or raftlog) runs the whole package on one,
// the default store otherwise. Tests that need a store set it themselves.
var testLogStore = os.Getenv("CLUSTER_TEST_LOG_STORE")

// group is n replicas on in-memory transports, each on its own directory.
type group struct {
	t      *testing.T
	peers  []cluster.Peer
	dirs   []string
	nodes  []*cluster.Node
	trans  []*raft.InmemTransport
	tune   func(*cluster.NodeConfig)
	events chan string
	// tcp runs the replicas on loopback TCP (which carries repairs)
	// instead of in-memory transports.
	tcp bool
	// tlsFor, when set, gives node i's mutual TLS on TCP (tls_test.go).
	tlsFor func(i int) *tls.Config
	// wrap, when set, gives node i's Raft transport over its in-memory
	// one.
	wrap func(i int, tr *raft.InmemTransport) raft.Transport
}

const testFileSize = 64 << 10

func newGroup(t *testing.T, n int, tune func(*cluster.NodeConfig)) *group {
	return newGroupOn(t, n, false, tune)
}

func newGroupOn(t *testing.T, n int, tcp bool, tune func(*cluster.NodeConfig)) *group {
	t.Helper()
	return newGroupWith(t, n, &group{tune: tune, tcp: tcp})
}

// newGroupWith starts n replicas of g's kind.
func newGroupWith(t *testing.T, n int, g *group) *group {
	t.Helper()
	g.t, g.events = t, make(chan string, 1024)
	tcp := g.tcp
	for i := range n {
		addr := fmt.Sprintf("10.0.0.%d:7000", i+1)
		if tcp {
			// Nodes stop and start again on their port: it must stay theirs.
			addr = testport.Addr(t, "127.0.0.1")
		}
		g.peers = append(g.peers, cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: addr})
		g.dirs = append(g.dirs, t.TempDir())
	}
	g.nodes = make([]*cluster.Node, n)
	g.trans = make([]*raft.InmemTransport, n)
	for i := range n {
		g.start(i)
	}
	t.Cleanup(g.closeAll)
	return g
}

func (g *group) nodeConfig(i int) cluster.NodeConfig {
	nc := cluster.NodeConfig{
		Dir: g.dirs[i],
		Broker: broker.Config{
			Store: engine.Config{CommitLogFileSize: testFileSize, ConsumeQueueUnits: 64, Logger: quiet,
				FlushDiskType: engine.SyncFlush,
				DelayLevels:   []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}},
			Index: index.Config{MaxHashSlotNum: 16, MaxIndexNum: 32},
		},
		BrokerName: "broker-a",
		StoreHost:  netip.MustParseAddrPort(fmt.Sprintf("127.0.0.%d:10911", i+1)),
		Cluster: cluster.Config{NodeID: g.peers[i].ID, Peers: g.peers,
			// Generous timeouts: CI runs these beside other packages on
			// 2 cores, and a lost lease fails a send.
			HeartbeatTimeout: 2 * time.Second, ElectionTimeout: 2 * time.Second,
			LeaderLeaseTimeout: time.Second, CommitTimeout: 5 * time.Millisecond,
			StateInterval: 20 * time.Millisecond, Logger: logger(), LogStore: testLogStore},
	}
	id := g.peers[i].ID
	nc.OnRoleChange = func(bid int64) {
		select {
		case g.events <- fmt.Sprintf("%s=%d", id, bid):
		default:
		}
	}
	if g.tune != nil {
		g.tune(&nc)
	}
	return nc
}

// start opens node i on a fresh transport connected to the live ones.
func (g *group) start(i int) {
	g.t.Helper()
	n, err := g.open(i, g.nodeConfig(i))
	if err != nil {
		g.t.Fatalf("open %s: %v", g.peers[i].ID, err)
	}
	g.nodes[i] = n
}

func (g *group) open(i int, nc cluster.NodeConfig) (*cluster.Node, error) {
	if g.tcp {
		var tr *cluster.TCPTransport
		var err error
		if g.tlsFor != nil {
			tr, err = cluster.NewTLSTransport(g.peers[i].Addr, "", g.tlsFor(i), nc.Cluster.Logger)
		} else {
			tr, err = cluster.NewTCPTransport(g.peers[i].Addr, "", quiet)
		}
		if err != nil {
			return nil, err
		}
		nc.Cluster.Transport = tr
		n, err := cluster.Open(nc)
		if err != nil {
			_ = tr.Close()
		}
		return n, err
	}
	_, tr := raft.NewInmemTransport(raft.ServerAddress(g.peers[i].Addr))
	for j, o := range g.trans {
		if o != nil && j != i {
			tr.Connect(raft.ServerAddress(g.peers[j].Addr), o)
			o.Connect(raft.ServerAddress(g.peers[i].Addr), tr)
		}
	}
	nc.Cluster.Transport = tr
	if g.wrap != nil {
		nc.Cluster.Transport = g.wrap(i, tr)
	}
	g.trans[i] = tr
	return cluster.Open(nc)
}

// stop closes node i and cuts its transport off.
func (g *group) stop(i int) {
	g.t.Helper()
	if g.nodes[i] == nil {
		return
	}
	if err := g.nodes[i].Close(); err != nil {
		g.t.Errorf("close %s: %v", g.peers[i].ID, err)
	}
	g.nodes[i] = nil
	if g.trans[i] == nil {
		return
	}
	for j, o := range g.trans {
		if o != nil && j != i {
			o.Disconnect(raft.ServerAddress(g.peers[i].Addr))
		}
	}
	_ = g.trans[i].Close()
	g.trans[i] = nil
}

func (g *group) closeAll() {
	for i := range g.nodes {
		g.stop(i)
	}
}

// leader waits for a writable leader and returns its index.
func (g *group) leader() int {
	g.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range g.nodes {
			if n != nil && n.Writable() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.t.Fatal("no leader within 20 s")
	return -1
}

// send stores one message through the leader's broker and fails the test
// unless it is SEND_OK.
func (g *group) send(topic string, qid int32, body string, props string) broker.SendResult {
	g.t.Helper()
	var res broker.SendResult
	for range 50 {
		b := g.nodes[g.leader()].Broker()
		res = b.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: topic,
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: qid, Body: []byte(body), Properties: props,
			BornTimestamp: 1700000000000, BornHost: netip.MustParseAddrPort("192.0.2.1:5555")})
		// A node that stopped leading before the send was proposed
		// refuses it whole ("a slave"), and so does Raft when the node
		// lost leadership before the entry reached its log
		// (raft.ErrNotLeader): sending again cannot store it twice.
		// A leadership lost while the entry was being committed
		// (raft.ErrLeadershipLost, seen under the race detector) may
		// have committed it: sent again, as a producer retries
		// SERVICE_NOT_AVAILABLE, it may be stored twice, and only the
		// acknowledged copy is the caller's.
		if res.Code != broker.ServiceNotAvailable || !notLeading(res.Remark) {
			break
		}
	}
	if res.Code != broker.Success {
		g.t.Fatalf("send %s/%d: %v %s", topic, qid, res.Code, res.Remark)
	}
	return res
}

// notLeading reports whether a refused send's remark says the node was not
// (or stopped being) the leader: a slave's refusal, the node's own before
// it proposes (cluster.ErrNotLeader, when it stepped down after the
// caller found it leading), or Raft's.
func notLeading(remark string) bool {
	return strings.Contains(remark, "(a slave)") ||
		strings.Contains(remark, cluster.ErrNotLeader.Error()) ||
		strings.Contains(remark, "("+raft.ErrNotLeader.Error()+")") ||
		strings.Contains(remark, "("+raft.ErrLeadershipLost.Error()+")")
}

// raftMaxBackoff is the longest hashicorp/raft (v1.8, replication.go)
// waits before it tries a follower again after failing to reach it: 10
// ms doubled for each failure in a row, at most 2^10 times. A follower
// that was down while the leader kept trying is reached again up to that
// long after it starts; the waits that follow a restart (converge,
// waitFor) allow it on top of their own time.
const raftMaxBackoff = 10 * time.Millisecond << 10

// converge waits until every live node has applied the same CommitLog
// prefix and dispatched it, and returns that offset.
func (g *group) converge() int64 {
	g.t.Helper()
	deadline := time.Now().Add(10*time.Second + raftMaxBackoff)
	for {
		var offs []int64
		for _, n := range g.nodes {
			if n != nil {
				offs = append(offs, n.AppliedOffset())
			}
		}
		same := true
		for _, o := range offs {
			same = same && o == offs[0]
		}
		if same {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, n := range g.nodes {
				if n != nil {
					if err := n.Broker().Store().WaitDispatched(ctx, offs[0]); err != nil {
						g.t.Fatal(err)
					}
				}
			}
			return offs[0]
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("replicas did not converge: applied offsets %v", offs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameFiles compares the files under sub of every live node's directory
// byte for byte, up to limit bytes of the concatenated CommitLog when
// limit >= 0 (files there are preallocated beyond what is written).
func (g *group) sameFiles(sub string, limit int64) {
	g.t.Helper()
	var ref map[string][]byte
	refNode := ""
	for i, n := range g.nodes {
		if n == nil {
			continue
		}
		files := readTree(g.t, filepath.Join(g.dirs[i], sub), limit)
		if ref == nil {
			ref, refNode = files, g.peers[i].ID
			continue
		}
		if len(files) != len(ref) {
			g.t.Fatalf("%s: %s has %d files, %s %d", sub, g.peers[i].ID, len(files), refNode, len(ref))
		}
		for name, b := range ref {
			if !bytes.Equal(files[name], b) {
				g.t.Fatalf("%s/%s differs between %s and %s", sub, name, refNode, g.peers[i].ID)
			}
		}
	}
	if len(ref) == 0 {
		g.t.Fatalf("no files under %s", sub)
	}
}

// readTree reads every file under dir. With limit >= 0 the files are
// CommitLog files named by their start offset: each is cut at limit and
// files starting at or past it are left out.
func readTree(t *testing.T, dir string, limit int64) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if limit >= 0 {
			var start int64
			if _, err := fmt.Sscanf(filepath.Base(p), "%d", &start); err != nil {
				return err
			}
			if start >= limit {
				return nil
			}
			if end := limit - start; end < int64(len(b)) {
				b = b[:end]
			}
		}
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
