// Command plot draws the charts of a `rocketstore bench` report: the
// throughput (msgs/s, log scale) of every produce/consume workload for
// rocketstore on mmap, its bound and NATS, beside the end-to-end latency
// percentiles, into one PNG. It is a module of its own so that the
// rocketstore binary does not link the plotting library; `rocketstore bench
// --plot FILE.png` runs it with go run.
//
//	go run . -in bench-out/bench.json -out bench-out/plot.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rocketstore/rocketstore/bench"
)

func main() {
	in := flag.String("in", "", "the bench report (`FILE.json`, as bench --out writes it); - for stdin")
	out := flag.String("out", "", "the chart to write (`FILE.png`)")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: plot -in REPORT.json -out FILE.png")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	var data []byte
	var err error
	if in == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(in)
	}
	if err != nil {
		return err
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: not a bench report: %w", in, err)
	}
	return plotBench(out, &rep)
}

// plotBench draws two charts side by side: throughput (msgs/s, log scale)
// of every produce/consume workload for rocketstore mmap, its bound and
// NATS; and the end-to-end latency percentiles.
func plotBench(file string, rep *bench.Report) error {
	var names []string
	var ours, bound, peer plotter.Values
	var latNames []string
	var lat [3]plotter.Values
	// Bars are drawn as log10 of the value (gonum's log scale cannot draw
	// bars, which start at 0); the ticks are labelled with the values.
	floor := func(v float64) float64 { return math.Log10(max(v, 1)) }
	for _, r := range rep.Results {
		if r.Backend != bench.Mmap || r.Err != "" {
			continue
		}
		if r.MsgsPerS > 0 {
			names = append(names, r.Name())
			ours = append(ours, floor(r.MsgsPerS))
			b, p := 0.0, 0.0 // absent
			if r.Bound != nil {
				b = floor(r.Bound.MsgsPerS)
			}
			if r.Peer != nil {
				p = floor(r.Peer.MsgsPerS)
			}
			bound, peer = append(bound, b), append(peer, p)
		}
		if r.Latency != nil {
			latNames = append(latNames, r.Name())
			lat[0] = append(lat[0], floor(r.Latency.P50))
			lat[1] = append(lat[1], floor(r.Latency.P99))
			lat[2] = append(lat[2], floor(r.Latency.P999))
		}
	}
	tp := plot.New()
	tp.Title.Text = "Throughput (mmap), msgs/s"
	tp.Y.Tick.Marker = log10Ticks{}
	w := vg.Points(5)
	series := []struct {
		name string
		v    plotter.Values
		c    color.Color
	}{{"rocketstore", ours, color.RGBA{R: 200, A: 255}}, {"bound", bound, color.Gray{Y: 160}},
		{"NATS JetStream", peer, color.RGBA{B: 200, A: 255}}}
	for i, s := range series {
		bars, err := plotter.NewBarChart(s.v, w)
		if err != nil {
			return err
		}
		bars.Color, bars.LineStyle.Width, bars.Offset = s.c, 0, w*vg.Length(i-1)
		tp.Add(bars)
		tp.Legend.Add(s.name, bars)
	}
	tp.NominalX(names...)
	tp.Y.Min, tp.Y.Max = 0, math.Ceil(tp.Y.Max+0.3)
	tp.X.Tick.Label.Rotation, tp.X.Tick.Label.XAlign, tp.X.Tick.Label.YAlign = 1.2, draw.XRight, draw.YCenter
	tp.Legend.Top = true

	lp := plot.New()
	lp.Title.Text = "Latency, µs (p50, p99, p99.9)"
	lp.Y.Tick.Marker = log10Ticks{}
	for i, name := range []string{"p50", "p99", "p99.9"} {
		bars, err := plotter.NewBarChart(lat[i], w*2)
		if err != nil {
			return err
		}
		bars.Color = color.RGBA{R: uint8(80 * (i + 1)), G: 60, B: 120, A: 255}
		bars.LineStyle.Width, bars.Offset = 0, w*2*vg.Length(i-1)
		lp.Add(bars)
		lp.Legend.Add(name, bars)
	}
	lp.NominalX(latNames...)
	lp.Y.Min, lp.Y.Max = 0, math.Ceil(lp.Y.Max+0.3)
	lp.X.Tick.Label.Rotation, lp.X.Tick.Label.XAlign, lp.X.Tick.Label.YAlign = 1.2, draw.XRight, draw.YCenter
	lp.Legend.Top = true

	img := vgimg.New(16*vg.Inch, 6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadY: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{tp, lp}}, tiles, dc)
	tp.Draw(canvases[0][0])
	lp.Draw(canvases[0][1])
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// log10Ticks labels an axis of log10 values with the values: 1, 10, 100,
// 1k, 10k, 100k, 1M, 10M.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	labels := []string{"1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M"}
	var ticks []plot.Tick
	for e := math.Floor(lo); e <= math.Ceil(hi) && int(e) < len(labels); e++ {
		if e >= 0 {
			ticks = append(ticks, plot.Tick{Value: e, Label: labels[int(e)]})
		}
	}
	return ticks
}
