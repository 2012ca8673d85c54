package timer

import "testing"

// TestLatenessBuckets: a delivery counts in the first bucket whose bound
// it does not exceed (bounds inclusive), past the last bound in none but
// Count, and a negative lateness (a clock stepped back) as 0.
func TestLatenessBuckets(t *testing.T) {
	var l Lateness
	for _, ms := range []int64{-5, 0, 10, 11, 1000, 1001, 300_000, 300_001} {
		l.observe(ms)
	}
	want := map[int64]int64{10: 3, 50: 1, 1000: 1, 1500: 1, 300_000: 1}
	var inBuckets int64
	for i, b := range LatenessBucketsMs {
		if l.Buckets[i] != want[b] {
			t.Errorf("bucket <= %d ms holds %d, want %d", b, l.Buckets[i], want[b])
		}
		inBuckets += l.Buckets[i]
	}
	if l.Count != 8 || l.Count-inBuckets != 1 {
		t.Errorf("count %d with %d past the last bound, want 8 and 1", l.Count, l.Count-inBuckets)
	}
	if want := int64(0 + 0 + 10 + 11 + 1000 + 1001 + 300_000 + 300_001); l.SumMs != want {
		t.Errorf("sum %d ms, want %d", l.SumMs, want)
	}
}
