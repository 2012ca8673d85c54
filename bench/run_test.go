package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs a reduced quick suite and checks that every workload
// produced a positive figure and that the table and JSON render.
func TestQuickRun(t *testing.T) {
	sp := DefaultSpec(true)
	if testing.Short() {
		sp.BodySizes, sp.Producers = []int{1024}, []int{1, 4}
	}
	sp.PutTime, sp.SyncTime, sp.LatencyTime = 100*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond
	sp.PutMsgs, sp.E2EMsgs, sp.LagSamples, sp.BacklogBytes = 20_000, 5_000, 500, 8<<20
	steps := 0
	rep, err := Run(context.Background(), Options{Spec: sp, Dir: t.TempDir(),
		Progress: func(done, total int, step string) { steps = total }})
	if err != nil {
		t.Fatal(err)
	}
	if steps == 0 || len(rep.Results) < steps {
		t.Fatalf("%d results for %d steps", len(rep.Results), steps)
	}
	for _, r := range rep.Results {
		if r.Err != "" {
			t.Errorf("%s %s: %s", r.Name(), r.Backend, r.Err)
			continue
		}
		if r.Msgs <= 0 || r.Seconds <= 0 {
			t.Errorf("%s %s: %d msgs in %v s", r.Name(), r.Backend, r.Msgs, r.Seconds)
		}
		if r.Group != GroupLag && r.MsgsPerS <= 0 {
			t.Errorf("%s %s: %v msgs/s", r.Name(), r.Backend, r.MsgsPerS)
		}
		if (r.Group == GroupE2E || r.Group == GroupLag) && (r.Latency == nil || r.Latency.P99 <= 0) {
			t.Errorf("%s %s: no latency", r.Name(), r.Backend)
		}
		if r.Bound != nil && (r.Bound.MsgsPerS <= 0 || r.Bound.Ratio <= 0) {
			t.Errorf("%s %s: bad bound %+v", r.Name(), r.Backend, r.Bound)
		}
		// Every put, catch-up and recovery (mmap) ran in alternation with
		// its bounds: the ratio is the median of the pairs', between
		// their min and max.
		if r.Backend == Mmap && (r.Group == GroupCatchUp || r.Group == GroupRecovery) {
			for _, b := range []*Bound{r.Bound, r.Physical} {
				if b != nil && (b.Pairs < 2 || !(b.RatioMin <= b.Ratio && b.Ratio <= b.RatioMax)) {
					t.Errorf("%s %s: not alternated with its bound: %+v", r.Name(), r.Backend, b)
				}
			}
		}
		if r.Group == GroupPut && (r.Bound == nil || r.Bound.Pairs < 2 ||
			!(r.Bound.RatioMin <= r.Bound.Ratio && r.Bound.Ratio <= r.Bound.RatioMax)) {
			t.Errorf("%s %s: not alternated with its bound: %+v", r.Name(), r.Backend, r.Bound)
		}
		// The sync put's bound does the CommitLog's own I/O, alternating
		// in short turns, several a slice.
		if r.Flush == "sync" && r.Bound != nil && (!strings.HasPrefix(r.Bound.Name, "pwrite+msync") ||
			!strings.Contains(r.Bound.Note, "6 slices of 5 alternating turns") || r.Bound.Pairs != 6) {
			t.Errorf("%s: bound %q, want the store's pwrite+msync", r.Name(), r.Bound.Name)
		}
		if r.Backend == Mmap && (r.Group == GroupRecovery || r.Group == GroupCatchUp || r.Flush == "async") && r.Bound == nil {
			t.Errorf("%s %s: no bound", r.Name(), r.Backend)
		}
		// The async put's bound is the physical one; the copy that takes
		// the page faults is a reference the store may beat.
		if r.Backend == Mmap && r.Flush == "async" && r.Bound != nil &&
			(!strings.Contains(r.Bound.Name, "write-prefaulted") || !strings.HasPrefix(r.Note, "reference, not a bound: memcpy → fresh mapped file")) {
			t.Errorf("%s: bound %q, note %q", r.Name(), r.Bound.Name, r.Note)
		}
	}
	rep.MergePeer([]Result{{Group: GroupPut, Backend: "nats", Body: 1024, Producers: 1, Flush: "async", Msgs: 1, MsgsPerS: 1}}, "test")
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| put 1KiB ×1 async | mmap |") || !strings.Contains(md.String(), "×") {
		t.Errorf("table lacks the put row or the peer ratio:\n%s", md.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(rep.Results) {
		t.Errorf("JSON does not round-trip: %v", err)
	}
	t.Log("\n" + md.String())
}

// TestRatioCells: small ratios keep two significant digits instead of
// printing "0 %", a ratio over 100 % is marked and explained under the
// table, and a quick run says that its ratios are not measurements.
func TestRatioCells(t *testing.T) {
	for r, want := range map[float64]string{0.004: "0.40 %", 0.05: "5.0 %", 0.93: "93 %", 1.5: "150 %"} {
		if got := pct(r); got != want {
			t.Errorf("pct(%v) = %q, want %q", r, got, want)
		}
	}
	rep := &Report{Spec: Spec{Quick: true, SyncTime: 150 * time.Millisecond}, Results: []Result{
		{Group: GroupPut, Backend: Mmap, Body: 128, Producers: 1, Flush: "sync", MsgsPerS: 1300,
			Bound: &Bound{Name: "write+fdatasync", MsgsPerS: 1000, Ratio: 1.3}},
		{Group: GroupPut, Backend: Mmap, Body: 128, Producers: 4, Flush: "sync", MsgsPerS: 900,
			Bound: &Bound{Name: "write+fdatasync", MsgsPerS: 1000, Ratio: 0.9}},
		{Group: GroupPut, Backend: Mmap, Body: 1024, Producers: 1, Flush: "sync", MsgsPerS: 900,
			Bound: &Bound{Name: "pwrite+msync", MsgsPerS: 1000, Ratio: 0.9, RatioMin: 0.5, RatioMax: 1.2, Pairs: 6}},
		// A median over 100 % with pairs under it is noise, not marked.
		{Group: GroupPut, Backend: Mmap, Body: 1024, Producers: 4, Flush: "sync", MsgsPerS: 1100,
			Bound: &Bound{Name: "pwrite+msync", MsgsPerS: 1000, Ratio: 1.1, RatioMin: 0.6, RatioMax: 1.9, Pairs: 6}},
		// Every pair over 100 %: the bound is wrong.
		{Group: GroupPut, Backend: Mmap, Body: 4096, Producers: 1, Flush: "sync", MsgsPerS: 1500,
			Bound: &Bound{Name: "pwrite+msync", MsgsPerS: 1000, Ratio: 1.5, RatioMin: 1.2, RatioMax: 2.4, Pairs: 6}},
	}}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{"| 130 % † |", "| 90 % |", "| 50 / 90 / 120 % |", "| 60 / 110 / 190 % |", "| 120 / 150 / 240 % † |", "min / median / max", "† over 100 % in every pair", "--quick is a smoke run", "turns of 5ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	rep.Spec.Quick, rep.Results = false, rep.Results[1:2]
	md.Reset()
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if out := md.String(); strings.Contains(out, "†") || strings.Contains(out, "smoke") {
		t.Errorf("a full run within its bounds has notes:\n%s", out)
	}
}
