package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TimelineSlice is the width of a slice of a server-load run's timeline.
const TimelineSlice = 100 * time.Millisecond

// StartSlices is how many slices from a run's start ConsumeAfterStart
// leaves out: its first second.
const StartSlices = 10

// TimelineBucket is the send→consume latency of the messages sent in one
// TimelineSlice of a run: it shows whether a run's p99 comes from its
// start, from periodic stalls or from every moment of it.
type TimelineBucket struct {
	AtMs  int64   `json:"at_ms"` // start of the slice, ms after the run started
	Count int64   `json:"count"` // messages sent in the slice and consumed
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	// AckP99 is the p99 of the acks of the messages sent in the slice.
	AckP99 float64 `json:"ack_p99_ms"`
}

// timeline collects one consumer stream's latencies by send time. It is
// fed under its stream's lock.
type timeline struct {
	slices []*hdrhistogram.Histogram
}

// record adds latency d of a message sent at sent (time since the run's
// start).
func (t *timeline) record(sent, d time.Duration) {
	i := int(max(sent, 0) / TimelineSlice)
	for len(t.slices) <= i {
		t.slices = append(t.slices, nil)
	}
	if t.slices[i] == nil {
		// 10 µs to 100 s, 2 significant digits: enough for a timeline,
		// and small.
		t.slices[i] = hdrhistogram.New(10, 100e6, 2)
	}
	_ = t.slices[i].RecordValue(max(d.Microseconds(), 10))
}

// mergeTimelines sums timelines slice by slice.
func mergeTimelines(ts []*timeline) []*hdrhistogram.Histogram {
	var all []*hdrhistogram.Histogram
	for _, t := range ts {
		for i, h := range t.slices {
			if h == nil {
				continue
			}
			for len(all) <= i {
				all = append(all, nil)
			}
			if all[i] == nil {
				all[i] = hdrhistogram.New(10, 100e6, 2)
			}
			all[i].Merge(h)
		}
	}
	return all
}

// latencyFrom summarises the slices from index from on (nil when there
// are none).
func latencyFrom(slices []*hdrhistogram.Histogram, from int) *Latency {
	all := hdrhistogram.New(10, 100e6, 2)
	for _, h := range slices[min(from, len(slices)):] {
		if h != nil {
			all.Merge(h)
		}
	}
	if all.TotalCount() == 0 {
		return nil
	}
	us := func(v int64) float64 { return float64(v) } // the slices hold µs, as Latency does
	return &Latency{Samples: all.TotalCount(), P50: us(all.ValueAtQuantile(50)), P99: us(all.ValueAtQuantile(99)),
		P999: us(all.ValueAtQuantile(99.9)), Max: us(all.Max())}
}

// makeTimeline summarises the send→consume and ack histograms of each
// slice.
func makeTimeline(consume, ack []*hdrhistogram.Histogram) []TimelineBucket {
	ms := func(v int64) float64 { return float64(v) / 1e3 }
	var out []TimelineBucket
	for i, h := range consume {
		if h == nil {
			continue
		}
		b := TimelineBucket{AtMs: int64(i) * TimelineSlice.Milliseconds(), Count: h.TotalCount(),
			P50: ms(h.ValueAtQuantile(50)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
		if i < len(ack) && ack[i] != nil {
			b.AckP99 = ms(ack[i].ValueAtQuantile(99))
		}
		out = append(out, b)
	}
	return out
}

// WriteTimeline writes r's timeline, one line a slice.
func WriteTimeline(w io.Writer, r ServerResult) {
	fmt.Fprintf(w, "timeline: %s %s %d B, by send time (%v slices): at ms, count, send→consume p50 / p99 / max ms, ack p99 ms\n",
		r.System, r.Shape, r.Body, TimelineSlice)
	var b strings.Builder
	for _, s := range r.Timeline {
		fmt.Fprintf(&b, "  %5d %7d %8.1f %8.1f %8.1f %8.1f\n", s.AtMs, s.Count, s.P50, s.P99, s.Max, s.AckP99)
	}
	if l := r.ConsumeAfterStart; l != nil {
		fmt.Fprintf(&b, "  after the first %v: %d messages, send→consume p50 / p99 / p99.9 %.2f / %.2f / %.2f ms\n",
			StartSlices*TimelineSlice, l.Samples, l.P50/1e3, l.P99/1e3, l.P999/1e3)
	}
	_, _ = io.WriteString(w, b.String())
}
