package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/rocketstore/rocketstore/bench"
)

// benchOptions are the flags of `rocketstore bench`.
type benchOptions struct {
	quick   bool
	out     string
	plot    string
	backend string
	peer    bool
	tmp     string
	peerDir string
	server  serverBenchOptions
	// replicated adds the replicated-send workload (bench.Replicated).
	replicated bool
	// replicatedMore are further producer counts for it.
	replicatedMore []int
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency against the machine's limits and NATS JetStream",
		Long: `bench runs the put, end-to-end, dispatch-lag, catch-up-read and recovery
workloads (package bench), each beside the physical bound measured in the same
run (memcpy into a fresh mapped file, write+fdatasync, read+CRC32), and prints
one Markdown table. With --peer it also runs the same produce/consume workloads
on NATS JetStream (the nested module bench/nats, through "go run") and shows
the ratio. Temporary stores are removed; a default run takes a few minutes,
--quick a few seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "small sizes: a smoke run of a few seconds")
	f.StringVar(&o.out, "out", "", "also write bench.md and bench.json into `DIR`")
	f.StringVar(&o.plot, "plot", "", "draw throughput and latency charts into `FILE.png`")
	f.StringVar(&o.backend, "backend", "both", "backend to measure: mmap, memfs, both, or none (with --replicated: only the replicated group)")
	f.BoolVar(&o.peer, "peer", false, "also run NATS JetStream (needs the go toolchain and the repository)")
	f.StringVar(&o.tmp, "tmp", "", "parent `DIR` of the temporary stores (default: the system's temp dir)")
	f.BoolVar(&o.replicated, "replicated", false, "also send through a 3-replica broker group on loopback against one SYNC_FLUSH broker")
	f.IntSliceVar(&o.replicatedMore, "replicated-more-producers", nil, "--replicated: also measure with these producer counts (both sides the same), after the 16-producer rows")
	f.StringVar(&o.peerDir, "peer-dir", "", "`DIR` of the bench/nats module (default: found above the working directory)")
	f.BoolVar(&o.server.on, "server", false, "instead: load rocketstore serve and nats-server JetStream over TCP with the same pipelined generator")
	f.IntVar(&o.server.conns, "server-conns", 4, "--server: producer connections")
	f.IntVar(&o.server.window, "server-window", 256, "--server: messages in flight per connection")
	f.StringVar(&o.server.queues, "server-queues", strconv.Itoa(bench.DefaultQueuesPerStream), "--server: rocketstore queues per producer stream (sent to in turn; one pull of 32 in flight on each); comma-separated to run several shapes")
	f.StringVar(&o.server.batches, "server-pull-batch", "128", "--server: rocketstore pull batch (the consumer's pullBatchSize, sent as maxMsgNums; above 32 the broker's maxTransferCountOnMessageInMemory is raised to match); comma-separated to run several shapes (every queues × batch pair)")
	f.StringVar(&o.server.sizes, "server-sizes", "128,4096", "--server: body sizes in bytes, comma-separated")
	f.StringVar(&o.server.flush, "server-flush", "async", "--server: async, sync or async,sync")
	f.DurationVar(&o.server.duration, "server-duration", 5*time.Second, "--server: how long each run sends")
	f.BoolVar(&o.server.consumers, "server-consumers", true, "--server: one long-polling consumer per producer stream")
	f.BoolVar(&o.server.timeline, "server-timeline", false, "--server: also print each run's send→consume latency by send time, 100 ms a line")
	f.IntVar(&o.server.repeat, "server-repeat", 1, "--server: run every configuration this many times (alternating the systems)")
	return cmd
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	var backends []string
	switch o.backend {
	case "both":
		backends = []string{bench.Mmap, bench.Memfs}
	case bench.Mmap, bench.Memfs:
		backends = []string{o.backend}
	case "none": // with --replicated: only the replicated workload
		if !o.replicated {
			return fmt.Errorf("--backend none measures nothing without --replicated")
		}
	default:
		return fmt.Errorf("--backend %q: want mmap, memfs, both, or none with --replicated", o.backend)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	stderr := cmd.ErrOrStderr()
	if o.server.on {
		return runServerBench(ctx, cmd.OutOrStdout(), stderr, o)
	}
	var bar *progressbar.ProgressBar
	// A bar redraws with carriage returns: on a terminal only; logs (CI)
	// get one line per workload instead.
	tty := isTerminal(stderr)
	run := bench.Run
	if backends == nil {
		run = func(context.Context, bench.Options) (*bench.Report, error) {
			return &bench.Report{Machine: bench.Machine(), Spec: bench.DefaultSpec(o.quick)}, nil
		}
	}
	rep, err := run(ctx, bench.Options{Spec: bench.DefaultSpec(o.quick), Dir: o.tmp, Backends: backends,
		Progress: func(done, total int, step string) {
			if !tty {
				if done < total { // the last call reports the end, not a step
					fmt.Fprintf(stderr, "[%d/%d] %s\n", done+1, total, step)
				} else {
					fmt.Fprintf(stderr, "%d workloads done\n", total)
				}
				return
			}
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr),
					progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true),
					progressbar.OptionClearOnFinish())
			}
			bar.Describe(fmt.Sprintf("%-34s", step))
			_ = bar.Set(done)
		}})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	if o.replicated {
		ro := bench.ReplicatedOptions{Dir: o.tmp, MoreProducers: o.replicatedMore}
		if o.quick {
			ro.Time = time.Second
		}
		fmt.Fprintln(stderr, "replicated sends (3 replicas) beside one SYNC_FLUSH broker")
		rs, err := bench.Replicated(ctx, ro)
		if err != nil {
			return fmt.Errorf("replicated workload: %w", err)
		}
		rep.Results = append(rep.Results, rs...)
	}
	if o.peer {
		peer, status := runPeer(ctx, stderr, o)
		rep.MergePeer(peer, status)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	if _, err := cmd.OutOrStdout().Write(md.Bytes()); err != nil {
		return err
	}
	if o.out != "" {
		if err := writeBenchFiles(o.out, rep, md.Bytes()); err != nil {
			return err
		}
	}
	if o.plot != "" {
		if err := plotBench(o.plot, rep); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	var failed []string
	for _, r := range rep.Results {
		if r.Err != "" {
			failed = append(failed, r.Name()+" "+r.Backend)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: %d workloads failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

func writeBenchFiles(dir string, rep *bench.Report, md []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), md, 0o644); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench.json"), js.Bytes(), 0o644)
}

// runPeer runs the NATS JetStream workloads with `go run` in the bench/nats
// module and returns their results, or none and a status saying why.
func runPeer(ctx context.Context, stderr io.Writer, o benchOptions) ([]bench.Result, string) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, "not run: the go toolchain is not on PATH (the peer is built from bench/nats with go run)"
	}
	dir := o.peerDir
	if dir == "" {
		if dir, err = findPeerModule(); err != nil {
			return nil, "not run: " + err.Error()
		}
	}
	args := []string{"run", "."}
	if o.quick {
		args = append(args, "-quick")
	}
	if o.tmp != "" {
		args = append(args, "-dir", o.tmp)
	}
	fmt.Fprintf(stderr, "NATS JetStream peer: go %s (in %s)\n", strings.Join(args, " "), dir)
	c := exec.CommandContext(ctx, goBin, args...)
	c.Dir = dir
	c.Stderr = stderr
	start := time.Now()
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Sprintf("failed: go run in %s: %v", dir, err)
	}
	var rs []bench.Result
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Sprintf("failed: bad JSON from the peer: %v", err)
	}
	return rs, fmt.Sprintf("nats-server embedded in-process, file storage, nats.go over an in-process connection; async publish with pipelined acks; run in %.0f s", time.Since(start).Seconds())
}

// findPeerModule looks for bench/nats/go.mod in the working directory and
// its parents.
func findPeerModule() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bench", "nats")
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("the bench/nats module was not found above the working directory (run from the repository or pass --peer-dir)")
		}
	}
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
