package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestReplicatedSmoke runs the replicated workload briefly, at two producer
// counts and on both Raft log stores: the rows of each count are measured
// with the same producers, each group row names its store and has its
// ratio, and each node's writes are counted (the figure itself is
// BENCHMARKS' job; TestSummarize covers the repeats).
func TestReplicatedSmoke(t *testing.T) {
	stores := []string{cluster.LogStoreWAL, cluster.LogStoreRaftLog}
	rs, err := Replicated(context.Background(), ReplicatedOptions{Dir: t.TempDir(), Bodies: []int{128},
		Producers: 4, MoreProducers: []int{8}, Warmup: 100 * time.Millisecond, Time: 500 * time.Millisecond,
		Repeats: 1, FileSize: 8 << 20, LogStores: stores})
	if err != nil {
		t.Fatal(err)
	}
	per := 1 + len(stores)
	if len(rs) != 2*per {
		t.Fatalf("%d results, want %d for each producer count: %+v", len(rs), per, rs)
	}
	for i := 0; i < len(rs); i += per {
		single := rs[i]
		// The single node counts its CommitLog syncs; each replica its
		// Raft log's bytes and fsyncs beside its CommitLog.
		if !strings.Contains(single.Note, "1 × ") || !strings.Contains(single.Note, "CommitLog syncs") {
			t.Errorf("single-node note %q: want 1 run and its CommitLog syncs", single.Note)
		}
		for j, store := range stores {
			repl := rs[i+1+j]
			if single.Msgs == 0 || repl.Msgs == 0 || repl.Bound == nil || repl.Bound.Ratio <= 0 ||
				single.Producers != repl.Producers || single.Producers != []int{4, 8}[i/per] {
				t.Fatalf("results: %+v", rs)
			}
			if repl.Backend != "mmap×3 "+store || !strings.Contains(repl.Note, "Raft log store "+store) {
				t.Errorf("group row %s %q: want log store %s", repl.Backend, repl.Note, store)
			}
			for _, n := range []string{"n1 ", "n2 ", "n3 "} {
				if !strings.Contains(repl.Note, n) {
					t.Errorf("group note %q: no writes of node %s", repl.Note, n)
				}
			}
			if strings.Contains(repl.Note, "Raft log 0)") || strings.Contains(repl.Note, "fsyncs 0/s") {
				t.Errorf("group note %q: a replica wrote no Raft log", repl.Note)
			}
		}
	}
	for _, r := range rs {
		t.Logf("%s %s %.0f msgs/s p50 %.0f p99 %.0f %s", r.Name(), r.Backend, r.MsgsPerS, r.Latency.P50, r.Latency.P99, r.Note)
	}
}

// TestSpreadOf: min, median and max of an unsorted list, the input kept.
func TestSpreadOf(t *testing.T) {
	v := []float64{3, 1, 2}
	if s := spreadOf(v); s != (spread{1, 2, 3}) {
		t.Fatalf("spreadOf(%v) = %+v, want {1 2 3}", v, s)
	}
	if v[0] != 3 {
		t.Fatalf("spreadOf sorted its input: %v", v)
	}
}

// TestSummarize: the row of repeated runs is the median run, its note the
// spread of rates and latencies and the median run's writes a message.
func TestSummarize(t *testing.T) {
	run := func(rate, p50 float64, clBytes int64) replRun {
		return replRun{Result: Result{Msgs: 1000, Seconds: 10, MsgsPerS: rate, Latency: &Latency{P50: p50, P99: 10 * p50}},
			nodes: []nodeWrites{{commitLog: clBytes, raftBytes: 2000, raftSyncs: 50, clSyncs: -1}}}
	}
	r := summarize([]replRun{run(300, 3, 3000), run(100, 1, 1000), run(200, 2, 2000)})
	if r.MsgsPerS != 200 {
		t.Fatalf("row rate %.0f, want the median run's 200", r.MsgsPerS)
	}
	for _, want := range []string{"3 × 10.0 s", "min/median/max 100/200/300", "p50 µs 1/2/3", "p99 µs 10/20/30",
		"n1 4 B/msg (CommitLog 2 + Raft log 2), Raft log fsyncs 5/s"} {
		if !strings.Contains(r.Note, want) {
			t.Errorf("note %q lacks %q", r.Note, want)
		}
	}
}
