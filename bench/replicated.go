package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// GroupReplicated is the replicated-send workload: sends through the
// leader of a 3-replica broker group (package cluster) on loopback TCP,
// beside the same sends to one broker with SYNC_FLUSH, in the same run.
const GroupReplicated = "replicated"

// ReplicatedOptions size Replicated.
type ReplicatedOptions struct {
	// Dir is the parent of the temporary stores ("" = os.TempDir()).
	Dir string
	// Bodies are the body sizes (128 B and 4 KiB).
	Bodies []int
	// Producers is the number of concurrent senders (16): replication
	// groups their sends into shared log writes, as SYNC_FLUSH groups
	// them into shared syncs.
	Producers int
	// MoreProducers are further producer counts, each measured the same
	// way after Producers (none): with 16 closed-loop producers a round
	// carries at most 16 sends, so the figure is 16 ÷ a round's latency;
	// more producers show what the group sustains when rounds fill up.
	MoreProducers []int
	// Warmup is sent before each measured run and not counted (2 s): it
	// elects the leader, maps the first files and fills the caches.
	Warmup time.Duration
	// Time is each measured run's duration (10 s).
	Time time.Duration
	// Repeats is how many times the single node and the group are
	// measured, alternating, so that a change in the machine's load
	// falls on both (3).
	Repeats int
	// FileSize is the CommitLog file size (64 MiB).
	FileSize int64
	// LogStores are the Raft log stores to measure the group on
	// (cluster.Config.LogStore; the default store alone): each repeat
	// runs the single node, then the group on each store in turn.
	// ReplicatedBound among them runs the bound of a group instead.
	LogStores []string
}

func (o ReplicatedOptions) withDefaults() ReplicatedOptions {
	if len(o.Bodies) == 0 {
		o.Bodies = []int{128, 4096}
	}
	if o.Producers == 0 {
		o.Producers = 16
	}
	if o.Warmup == 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Time == 0 {
		o.Time = 10 * time.Second
	}
	if o.Repeats == 0 {
		o.Repeats = 3
	}
	if o.FileSize == 0 {
		o.FileSize = 64 << 20
	}
	if len(o.LogStores) == 0 {
		o.LogStores = []string{cluster.LogStoreWAL}
	}
	return o
}

// Replicated measures, for each body size, one broker with SYNC_FLUSH and
// a 3-replica group with SYNC_FLUSH on every replica, with the same
// producers for the same time, o.Repeats times alternating. Each row is
// the median run; its note gives min/median/max, the writes of each node
// and, for the group, the ratio to the single node of each pair of runs
// (Bound.Ratio is their median).
func Replicated(ctx context.Context, o ReplicatedOptions) ([]Result, error) {
	o = o.withDefaults()
	var out []Result
	for _, p := range append([]int{o.Producers}, o.MoreProducers...) {
		if p <= 0 {
			return out, fmt.Errorf("replicated: %d producers (want at least 1)", p)
		}
		op := o
		op.Producers = p
		rs, err := op.compare(ctx)
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// compare measures each body size on one node and on the group on each
// log store, in turns.
func (o ReplicatedOptions) compare(ctx context.Context) ([]Result, error) {
	var out []Result
	for _, body := range o.Bodies {
		var singles []replRun
		groups := make([][]replRun, len(o.LogStores))
		for range o.Repeats {
			single, err := o.run(ctx, body, 1, "")
			if err != nil {
				return out, fmt.Errorf("single node: %w", err)
			}
			singles = append(singles, single)
			for i, ls := range o.LogStores {
				repl, err := o.run(ctx, body, 3, ls)
				if err != nil {
					return out, fmt.Errorf("replicated (log store %s): %w", ls, err)
				}
				groups[i] = append(groups[i], repl)
			}
		}
		single := summarize(singles)
		rows := make([]Result, len(groups))
		for i, runs := range groups {
			ratios := make([]float64, len(runs))
			for j := range runs {
				ratios[j] = runs[j].MsgsPerS / singles[j].MsgsPerS
			}
			repl := summarize(runs)
			rr := spreadOf(ratios)
			repl.Bound = &Bound{Name: "single-node SYNC_FLUSH", MsgsPerS: single.MsgsPerS, MBPerS: single.MBPerS, Ratio: rr.med}
			if single.Latency != nil {
				repl.Bound.Note = fmt.Sprintf("single-node p99 %.0f µs", single.Latency.P99)
			}
			what := "Raft log store " + o.LogStores[i]
			if o.LogStores[i] == ReplicatedBound {
				what = "no Raft: the bound (each send shipped to a log on each node, which appends and syncs what arrived, and stored unsynced on the first node's broker; answered once two logs synced it)"
			}
			repl.Note = fmt.Sprintf("3 replicas, loopback TCP, %s; ÷ single min/median/max %.0f/%.0f/%.0f %%; %s",
				what, 100*rr.min, 100*rr.med, 100*rr.max, repl.Note)
			rows[i] = repl
		}
		single.Group = GroupReplicated
		single.Note = "1 node (baseline); " + single.Note
		out = append(out, single)
		out = append(out, rows...)
	}
	return out, nil
}

// replRun is one measured run: its result and what each node wrote.
type replRun struct {
	Result
	nodes []nodeWrites
}

// nodeWrites is what one node wrote during a measured run, counted where
// the writes pass through our code: the CommitLog's growth (its max
// offset), the Raft log's appends as raft-wal counts them (each one
// fsync), and the CommitLog's syncs where the store's file system is ours
// to wrap (the single node).
type nodeWrites struct {
	commitLog int64
	raftBytes uint64 // encoded entries plus their frame headers; not the records a log store of records entries put in the CommitLog
	raftSyncs uint64
	clSyncs   int64  // -1: not counted
	logName   string // of raftBytes and raftSyncs: "" is "Raft log"
}

// spread is the minimum, median and maximum of repeated figures.
type spread struct{ min, med, max float64 }

func spreadOf(v []float64) spread {
	s := slices.Clone(v)
	slices.Sort(s)
	return spread{s[0], s[len(s)/2], s[len(s)-1]}
}

// summarize returns the median run's result with the spread of the runs
// and the writes of each node in its note.
func summarize(runs []replRun) Result {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.MsgsPerS
	}
	med := slices.IndexFunc(runs, func(r replRun) bool { return r.MsgsPerS == spreadOf(rates).med })
	r := runs[med].Result
	sp := spreadOf(rates)
	var p50, p99 []float64
	for _, run := range runs {
		if run.Latency != nil {
			p50, p99 = append(p50, run.Latency.P50), append(p99, run.Latency.P99)
		}
	}
	note := fmt.Sprintf("%d × %.1f s: msgs/s min/median/max %.0f/%.0f/%.0f", len(runs), r.Seconds, sp.min, sp.med, sp.max)
	if len(p50) > 0 {
		a, b := spreadOf(p50), spreadOf(p99)
		note += fmt.Sprintf("; p50 µs %.0f/%.0f/%.0f, p99 µs %.0f/%.0f/%.0f", a.min, a.med, a.max, b.min, b.med, b.max)
	}
	note += "; median run, per node: " + runs[med].writesNote()
	r.Note = strings.TrimSuffix(note+"; "+r.Note, "; ")
	return r
}

// writesNote renders each node's bytes written per message and syncs per
// second.
func (r replRun) writesNote() string {
	var parts []string
	for i, w := range r.nodes {
		msgs, secs := float64(max(r.Msgs, 1)), r.Seconds
		s := fmt.Sprintf("n%d %.0f B/msg (CommitLog %.0f", i+1, (float64(w.commitLog)+float64(w.raftBytes))/msgs, float64(w.commitLog)/msgs)
		if w.raftSyncs > 0 || w.raftBytes > 0 {
			name := cmp.Or(w.logName, "Raft log")
			s += fmt.Sprintf(" + %s %.0f), %s fsyncs %.0f/s", name, float64(w.raftBytes)/msgs, name, float64(w.raftSyncs)/secs)
		} else {
			s += ")"
		}
		if w.clSyncs >= 0 {
			s += fmt.Sprintf(", CommitLog syncs %.0f/s", float64(w.clSyncs)/secs)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// run warms up, then sends for o.Time through a group of n replicas on
// log store logStore (n == 1: a plain broker), counting what each node
// writes.
func (o ReplicatedOptions) run(ctx context.Context, body, n int, logStore string) (replRun, error) {
	parent, err := os.MkdirTemp(o.Dir, "rocketstore-repl-*")
	if err != nil {
		return replRun{}, err
	}
	defer os.RemoveAll(parent)
	bc := broker.Config{Store: engine.Config{CommitLogFileSize: o.FileSize, FlushDiskType: engine.SyncFlush, Logger: quietLog}}
	if logStore == ReplicatedBound {
		return o.runBound(ctx, parent, bc, body)
	}
	if n == 1 {
		fsys, err := mmap.New(filepath.Join(parent, "single"))
		if err != nil {
			return replRun{}, err
		}
		syncs := &syncCounter{}
		b, err := broker.Open(countingFS{fsys, syncs}, bc)
		if err != nil {
			return replRun{}, err
		}
		defer func() { _ = b.Close() }() // the scratch broker, after the run
		leader := func() *broker.Broker { return b }
		if _, err := o.send(ctx, leader, body, n, o.Warmup); err != nil {
			return replRun{}, fmt.Errorf("warm-up: %w", err)
		}
		cl0 := b.Store().CommitLog().MaxOffset()
		syncs.reset()
		r, err := o.send(ctx, leader, body, n, o.Time)
		return replRun{Result: r, nodes: []nodeWrites{{commitLog: b.Store().CommitLog().MaxOffset() - cl0,
			clSyncs: syncs.syncs.Load()}}}, err
	}
	nodes, err := startGroup(parent, n, bc, logStore)
	defer func() {
		for _, nd := range nodes {
			_ = nd.Close()
		}
	}()
	if err != nil {
		return replRun{}, err
	}
	if _, err = waitLeader(ctx, nodes); err != nil {
		return replRun{}, err
	}
	leader := func() *broker.Broker {
		b, _ := waitLeader(ctx, nodes)
		return b
	}
	if _, err := o.send(ctx, leader, body, n, o.Warmup); err != nil {
		return replRun{}, fmt.Errorf("warm-up: %w", err)
	}
	before := groupWrites(nodes)
	rounds0, sends0 := groupRounds(nodes)
	stages, err := listenRaftStages()
	if err != nil {
		return replRun{}, err
	}
	r, err := o.send(ctx, leader, body, n, o.Time)
	if sn := stages.note(); sn != "" {
		r.Note = strings.TrimPrefix(r.Note+"; "+sn, "; ")
	}
	r.Backend = "mmap×3 " + logStore
	after := groupWrites(nodes)
	rounds, sends := groupRounds(nodes)
	for i := range after {
		after[i].commitLog -= before[i].commitLog
		after[i].raftBytes -= before[i].raftBytes
		after[i].raftSyncs -= before[i].raftSyncs
	}
	if rounds > rounds0 {
		r.Note = strings.TrimPrefix(r.Note+fmt.Sprintf("; %.1f sends per Raft entry", float64(sends-sends0)/float64(rounds-rounds0)), "; ")
	}
	return replRun{Result: r, nodes: after}, err
}

// groupWrites reads each replica's write counters.
func groupWrites(nodes []*cluster.Node) []nodeWrites {
	out := make([]nodeWrites, len(nodes))
	for i, nd := range nodes {
		ls := nd.LogStats()
		out[i] = nodeWrites{commitLog: nd.Broker().Store().CommitLog().MaxOffset(),
			// The records a log store of records entries wrote are the
			// CommitLog's growth, counted there.
			raftBytes: ls.Bytes - ls.RecordBytes, raftSyncs: ls.Syncs, clSyncs: -1}
	}
	return out
}

// groupRounds sums the rounds the replicas proposed and the sends in them.
func groupRounds(nodes []*cluster.Node) (rounds, sends int64) {
	for _, nd := range nodes {
		rn, sn := nd.RoundStats()
		rounds, sends = rounds+rn, sends+sn
	}
	return rounds, sends
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// startGroup opens n replicas on loopback TCP, with their Raft logs on
// logStore.
func startGroup(parent string, n int, bc broker.Config, logStore string) ([]*cluster.Node, error) {
	var peers []cluster.Peer
	var trans []*cluster.TCPTransport
	var nodes []*cluster.Node
	for i := range n {
		tr, err := cluster.NewTCPTransport("127.0.0.1:0", "", quietLog)
		if err != nil {
			return nil, err
		}
		trans = append(trans, tr)
		peers = append(peers, cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: string(tr.LocalAddr())})
	}
	for i := range n {
		tr := trans[i]
		nd, err := cluster.Open(cluster.NodeConfig{Dir: filepath.Join(parent, peers[i].ID), Broker: bc, BrokerName: "bench",
			StoreHost: netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", 20000+i)),
			Cluster:   cluster.Config{NodeID: peers[i].ID, Peers: peers, Transport: tr, Logger: quietLog, LogStore: logStore}})
		if err != nil {
			for _, t := range trans[i:] {
				_ = t.Close()
			}
			return nodes, err
		}
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

func waitLeader(ctx context.Context, nodes []*cluster.Node) (*broker.Broker, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		for _, nd := range nodes {
			if nd.Writable() {
				return nd.Broker(), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, errors.New("no leader elected within 20 s")
}

// send runs o.Producers senders for d through the group's leader.
// A send refused because leadership moved is sent again to the new
// leader (as a client does after refreshing its route) and counted.
func (o ReplicatedOptions) send(ctx context.Context, leader func() *broker.Broker, body, n int, d time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var moved atomic.Int64
	bs := make([]*broker.Broker, o.Producers)
	fn := func(p int, req *broker.SendRequest) (broker.SendResult, bool) {
		for ctx.Err() == nil {
			if bs[p] == nil {
				if bs[p] = leader(); bs[p] == nil {
					return broker.SendResult{Code: broker.ServiceNotAvailable, Remark: "no leader"}, true
				}
			}
			res := bs[p].SendMessage(context.Background(), req)
			if res.Code != broker.ServiceNotAvailable || n == 1 {
				return res, true
			}
			moved.Add(1)
			bs[p] = nil
		}
		return broker.SendResult{}, false
	}
	r, err := o.sendWith(ctx, fn, body)
	if m := moved.Load(); m > 0 {
		r.Note = strings.TrimPrefix(r.Note+fmt.Sprintf("; %d sends retried after a leader change", m), "; ")
	}
	return r, err
}

// sendWith runs o.Producers senders, each sending through fn (with its
// producer index) until ctx ends, and measures them. fn reports false for
// a send it did not make because ctx ended.
func (o ReplicatedOptions) sendWith(ctx context.Context, fn func(p int, req *broker.SendRequest) (broker.SendResult, bool), body int) (Result, error) {
	var msgs atomic.Int64
	var firstErr atomic.Pointer[string]
	hists := make([]*Histogram, o.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	cpu0, cpuErr := ProcessCPU(os.Getpid())
	for p := range o.Producers {
		hists[p] = NewHistogram()
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, max(body, 8))
			req := &broker.SendRequest{ProducerGroup: "bench", Topic: "BenchReplicated", DefaultTopic: record.DefaultTopic,
				DefaultTopicQueueNums: 8, QueueID: int32(p % 8), Body: payload,
				BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
			for ctx.Err() == nil {
				t0 := time.Now()
				req.BornTimestamp = t0.UnixMilli()
				res, sent := fn(p, req)
				if !sent {
					return
				}
				if res.Code != broker.Success {
					s := fmt.Sprintf("%v: %s", res.Code, res.Remark)
					firstErr.CompareAndSwap(nil, &s)
					return
				}
				hists[p].Record(time.Since(t0))
				msgs.Add(1)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	cpu1, cpuErr1 := ProcessCPU(os.Getpid())
	if e := firstErr.Load(); e != nil {
		return Result{}, errors.New(*e)
	}
	all := NewHistogram()
	for _, h := range hists {
		all.h.Merge(h.h)
	}
	r := Result{Group: GroupReplicated, Backend: Mmap, Body: body, Producers: o.Producers, Flush: "sync",
		Msgs: msgs.Load(), BodyBytes: msgs.Load() * int64(body), Seconds: secs, Latency: all.Latency()}
	r.MsgsPerS = float64(r.Msgs) / secs
	r.MBPerS = float64(r.BodyBytes) / secs / 1e6
	if cpuErr == nil && cpuErr1 == nil && r.Msgs > 0 {
		// The whole process: the senders and every replica (or the one
		// node) share the host's cores.
		cpu := (cpu1 - cpu0).Seconds()
		r.Note = fmt.Sprintf("process CPU %.1f µs a message (%.2f cores)", cpu/float64(r.Msgs)*1e6, cpu/secs)
	}
	return r, nil
}
