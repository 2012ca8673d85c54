package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// readEpochs drives a regionReads as two parsers would, region by region
// (the second parser one region behind), each region costing what
// cost(epoch, method) says in ns per byte, and returns the method of each
// epoch as a string: m for the mapping, p for pread.
func readEpochs(epochs int, cost func(e int, m readMethod) float64) string {
	c := newRegionReads()
	var got strings.Builder
	for r := 0; r < epochs*regionReadsEpoch; r++ {
		m := c.next(r)
		if r%regionReadsEpoch == 0 {
			got.WriteByte("mp"[m])
		}
		n := int64(parseAheadRegion)
		c.observe(r, m, n, time.Duration(cost(r/regionReadsEpoch, m)*float64(n)))
	}
	return got.String()
}

// The parsers measure both methods first, then read with the cheaper,
// probing the other after regionReadsProbe epochs and then half as often
// each time the probe confirms the choice (epochs 8, 24, 56 when nothing
// changes), and as often again after a change; a difference under
// regionReadsSwitch keeps the mapping; one slow epoch changes nothing; a
// file whose mapping turns expensive (an older part) moves them to pread
// within two epochs.
func TestRegionReadsPrefersCheaper(t *testing.T) {
	flat := func(mapped, pread float64) func(int, readMethod) float64 {
		return func(_ int, m readMethod) float64 { return [2]float64{mapped, pread}[m] }
	}
	for _, tc := range []struct {
		name string
		cost func(e int, m readMethod) float64
		want string
	}{
		{"mapping cheaper", flat(0.2, 0.3), "mpmmmmmm" + "pmmmmmmm" + "mmmmmmmm" + "pmmmmmmm" +
			"mmmmmmmm" + "mmmmmmmm" + "mmmmmmmm" + "pmmmmmmm" + "mmmmmmmm"},
		{"pread cheaper", flat(0.6, 0.3), "mppppppp" + "ppmppppp" + "pppppppp" + "ppmppppp"},
		{"within the margin", flat(0.33, 0.28), "mpmmmmmm" + "pmmmmmmm" + "mmmmmmmm" + "pmmmmmmm"},
		{"one slow mapped epoch", func(e int, m readMethod) float64 {
			if e == 5 && m == readMapped {
				return 5
			}
			return flat(0.2, 0.3)(e, m)
		}, "mpmmmmmm" + "pmmmmmmm" + "mmmmmmmm" + "pmmmmmmm"},
		{"a slow first pread epoch", func(e int, m readMethod) float64 {
			if e == 1 {
				return 3.6
			}
			return flat(0.6, 0.3)(e, m)
		}, "mpmmmmmm" + "pppppppp" + "pmpppppp" + "pppppppp"},
		{"mapping turns expensive", func(e int, m readMethod) float64 {
			if e >= 10 {
				return flat(0.6, 0.3)(e, m)
			}
			return flat(0.2, 0.3)(e, m)
		}, "mpmmmmmm" + "pmmmpppp" + "ppppmppp" + "pppppppp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readEpochs(len(tc.want), tc.cost); got != tc.want {
				t.Fatalf("epochs read %s, want %s", got, tc.want)
			}
		})
	}
}

// A parser still in the epoch before reads its region as that epoch did,
// and its time is not counted in the new epoch's.
func TestRegionReadsLaggingParser(t *testing.T) {
	c := newRegionReads()
	for r := range regionReadsEpoch - 1 {
		c.observe(r, c.next(r), 100, 20)
	}
	if m := c.next(regionReadsEpoch); m != readPread {
		t.Fatalf("second epoch reads with %d, want pread", m)
	}
	last := regionReadsEpoch - 1
	if m := c.next(last); m != readMapped {
		t.Fatalf("the first epoch's last region reads with %d after the second began, want the mapping", m)
	}
	c.observe(last, readMapped, 100, time.Hour)
	c.observe(regionReadsEpoch, readPread, 100, 30)
	if c.ns != 30 || c.bytes != 100 {
		t.Fatalf("second epoch measured %d ns over %d bytes, want 30 over 100", c.ns, c.bytes)
	}
	if got := fmt.Sprint(c.cost(readMapped)); got != "0.2" {
		t.Fatalf("the mapping's cost is %s ns a byte, want 0.2", got)
	}
}

// forEachRegionRead runs test once with the parsers choosing how to read
// (auto) and once with each method forced, so that both read paths meet
// every case of the test.
func forEachRegionRead(t *testing.T, test func(t *testing.T)) {
	for _, m := range []readMethod{-1, readMapped, readPread} {
		t.Run(map[readMethod]string{-1: "auto", readMapped: "mapped", readPread: "pread"}[m], func(t *testing.T) {
			forcedRegionRead = m
			defer func() { forcedRegionRead = -1 }()
			test(t)
		})
	}
}

// ForEachRegionRead is forEachRegionRead for the engine_test package; it
// exists only in tests.
func ForEachRegionRead(t *testing.T, test func(t *testing.T)) { forEachRegionRead(t, test) }
