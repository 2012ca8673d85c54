package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
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
	// Time is each run's duration (2 s).
	Time time.Duration
	// FileSize is the CommitLog file size (64 MiB).
	FileSize int64
}

func (o ReplicatedOptions) withDefaults() ReplicatedOptions {
	if len(o.Bodies) == 0 {
		o.Bodies = []int{128, 4096}
	}
	if o.Producers == 0 {
		o.Producers = 16
	}
	if o.Time == 0 {
		o.Time = 2 * time.Second
	}
	if o.FileSize == 0 {
		o.FileSize = 64 << 20
	}
	return o
}

// Replicated measures, for each body size, one broker with SYNC_FLUSH and
// then a 3-replica group with SYNC_FLUSH on the leader, with the same
// producers for the same time. Each replicated Result's Bound is the
// single-node figure, its Ratio replicated over single.
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

// compare measures each body size on one node, then on the group.
func (o ReplicatedOptions) compare(ctx context.Context) ([]Result, error) {
	var out []Result
	for _, body := range o.Bodies {
		single, err := o.run(ctx, body, 1)
		if err != nil {
			return out, fmt.Errorf("single node: %w", err)
		}
		repl, err := o.run(ctx, body, 3)
		if err != nil {
			return out, fmt.Errorf("replicated: %w", err)
		}
		repl.Bound = &Bound{Name: "single-node SYNC_FLUSH", MsgsPerS: single.MsgsPerS, MBPerS: single.MBPerS,
			Ratio: repl.MsgsPerS / single.MsgsPerS}
		if single.Latency != nil {
			repl.Bound.Note = fmt.Sprintf("single-node p99 %.0f µs", single.Latency.P99)
		}
		single.Group, single.Note = GroupReplicated, "1 node (baseline)"
		repl.Note = strings.TrimPrefix(repl.Note+"; 3 replicas, loopback TCP", "; ")
		out = append(out, single, repl)
	}
	return out, nil
}

// run sends for o.Time through a group of n replicas (n == 1: a plain
// broker).
func (o ReplicatedOptions) run(ctx context.Context, body, n int) (Result, error) {
	parent, err := os.MkdirTemp(o.Dir, "rocketstore-repl-*")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(parent)
	bc := broker.Config{Store: engine.Config{CommitLogFileSize: o.FileSize, FlushDiskType: engine.SyncFlush, Logger: quietLog}}
	var leader func() *broker.Broker
	if n == 1 {
		fsys, err := mmap.New(filepath.Join(parent, "single"))
		if err != nil {
			return Result{}, err
		}
		b, err := broker.Open(fsys, bc)
		if err != nil {
			return Result{}, err
		}
		defer func() { _ = b.Close() }() // the scratch broker, after the run
		leader = func() *broker.Broker { return b }
	} else {
		nodes, err := startGroup(parent, n, bc)
		defer func() {
			for _, nd := range nodes {
				_ = nd.Close()
			}
		}()
		if err != nil {
			return Result{}, err
		}
		if _, err = waitLeader(ctx, nodes); err != nil {
			return Result{}, err
		}
		leader = func() *broker.Broker {
			b, _ := waitLeader(ctx, nodes)
			return b
		}
		r, err := o.send(ctx, leader, body, n)
		var rounds, sends int64
		for _, nd := range nodes {
			rn, sn := nd.RoundStats()
			rounds, sends = rounds+rn, sends+sn
		}
		if rounds > 0 {
			r.Note = strings.TrimPrefix(r.Note+fmt.Sprintf("; %.1f sends per Raft entry", float64(sends)/float64(rounds)), "; ")
		}
		return r, err
	}
	return o.send(ctx, leader, body, n)
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// startGroup opens n replicas on loopback TCP.
func startGroup(parent string, n int, bc broker.Config) ([]*cluster.Node, error) {
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
			Cluster:   cluster.Config{NodeID: peers[i].ID, Peers: peers, Transport: tr, Logger: quietLog}})
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

// send runs o.Producers senders for o.Time.
// A send refused because leadership moved is sent again to the new
// leader (as a client does after refreshing its route) and counted.
func (o ReplicatedOptions) send(ctx context.Context, leader func() *broker.Broker, body, n int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Time)
	defer cancel()
	var msgs, moved atomic.Int64
	var firstErr atomic.Pointer[string]
	hists := make([]*Histogram, o.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	for p := range o.Producers {
		hists[p] = NewHistogram()
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := make([]byte, max(body, 8))
			req := &broker.SendRequest{ProducerGroup: "bench", Topic: "BenchReplicated", DefaultTopic: record.DefaultTopic,
				DefaultTopicQueueNums: 8, QueueID: int32(p % 8), Body: payload,
				BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
			b := leader()
			for ctx.Err() == nil && b != nil {
				t0 := time.Now()
				req.BornTimestamp = t0.UnixMilli()
				res := b.SendMessage(context.Background(), req)
				if res.Code == broker.ServiceNotAvailable && n > 1 {
					moved.Add(1)
					b = leader()
					continue
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
	if n > 1 {
		r.Backend = "mmap×3"
		if m := moved.Load(); m > 0 {
			r.Note = fmt.Sprintf("%d sends retried after a leader change", m)
		}
	}
	return r, nil
}
