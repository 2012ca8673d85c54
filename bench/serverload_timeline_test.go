package bench

import (
	"testing"
	"time"
)

// A timeline sorts latencies into slices by send time, and
// ConsumeAfterStart's summary leaves the first StartSlices slices out.
func TestTimelineSlices(t *testing.T) {
	var a, b timeline
	a.record(0, 500*time.Millisecond)                       // slice 0: a slow start
	b.record(50*time.Millisecond, 400*time.Millisecond)     // slice 0
	a.record(StartSlices*TimelineSlice, 2*time.Millisecond) // first slice after the start
	b.record(StartSlices*TimelineSlice+5*time.Millisecond, 4*time.Millisecond)
	a.record(-time.Millisecond, time.Millisecond) // before the start: slice 0
	slices := mergeTimelines([]*timeline{&a, &b})
	tl := makeTimeline(slices, nil)
	if len(tl) != 2 || tl[0].AtMs != 0 || tl[0].Count != 3 || tl[1].AtMs != StartSlices*TimelineSlice.Milliseconds() || tl[1].Count != 2 {
		t.Fatalf("timeline %+v", tl)
	}
	if tl[0].Max < 495 || tl[0].Max > 505 {
		t.Fatalf("slice 0 max %.1f ms, want 500", tl[0].Max)
	}
	l := latencyFrom(slices, StartSlices)
	if l == nil || l.Samples != 2 || l.Max < 3900 || l.Max > 4100 {
		t.Fatalf("after the start: %+v, want 2 samples up to 4 ms", l)
	}
	if l := latencyFrom(slices, StartSlices+1); l != nil {
		t.Fatalf("past the last slice: %+v, want nil", l)
	}
}
