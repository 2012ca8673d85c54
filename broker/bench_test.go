package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// BenchmarkLongPollWakeup measures put → held pull returns.
func BenchmarkLongPollWakeup(b *testing.B) {
	br := open(b, memfs.New(nil), testConfig())
	defer br.Close()
	createTopic(b, br, "T", 1)
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		req := pullReq("g", "T", 0, int64(i))
		req.SysFlag |= 0x2
		done := make(chan time.Time, 1)
		go func() {
			if resp, err := br.Pull(ctx, req); err != nil || resp.Code != 0 {
				b.Error(resp, err)
			}
			done <- time.Now()
		}()
		if err := br.WaitHeldPulls(ctx, 1); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := br.Store().Put(ctx, msg("T", 0, "A", "")); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, (<-done).Sub(start))
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds()), "p99-µs")
}
