package bench

import (
	"context"
	"testing"
	"time"
)

// TestReplicatedSmoke runs the replicated workload briefly: both rows are
// measured and the ratio is set (the figure itself is BENCHMARKS' job).
func TestReplicatedSmoke(t *testing.T) {
	rs, err := Replicated(context.Background(), ReplicatedOptions{Dir: t.TempDir(), Bodies: []int{128},
		Producers: 4, Time: 500 * time.Millisecond, FileSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Msgs == 0 || rs[1].Msgs == 0 || rs[1].Bound == nil || rs[1].Bound.Ratio <= 0 {
		t.Fatalf("results: %+v", rs)
	}
	for _, r := range rs {
		t.Logf("%s %s %.0f msgs/s p50 %.0f p99 %.0f %s", r.Name(), r.Backend, r.MsgsPerS, r.Latency.P50, r.Latency.P99, r.Note)
	}
}
