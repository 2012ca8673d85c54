package bench

import (
	"context"
	"testing"
	"time"
)

// TestReplicatedSmoke runs the replicated workload briefly, at two producer
// counts: both rows of each are measured with the same producers and the
// ratio is set (the figure itself is BENCHMARKS' job).
func TestReplicatedSmoke(t *testing.T) {
	rs, err := Replicated(context.Background(), ReplicatedOptions{Dir: t.TempDir(), Bodies: []int{128},
		Producers: 4, MoreProducers: []int{8}, Time: 500 * time.Millisecond, FileSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 2 for each producer count: %+v", len(rs), rs)
	}
	for i := 0; i < 4; i += 2 {
		single, repl := rs[i], rs[i+1]
		if single.Msgs == 0 || repl.Msgs == 0 || repl.Bound == nil || repl.Bound.Ratio <= 0 ||
			single.Producers != repl.Producers || single.Producers != []int{4, 8}[i/2] {
			t.Fatalf("results: %+v", rs)
		}
	}
	for _, r := range rs {
		t.Logf("%s %s %.0f msgs/s p50 %.0f p99 %.0f %s", r.Name(), r.Backend, r.MsgsPerS, r.Latency.P50, r.Latency.P99, r.Note)
	}
}
