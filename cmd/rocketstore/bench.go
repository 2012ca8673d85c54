package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/cluster"
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
	// timers runs the timer exactness workload instead (bench.Timers).
	timers   bench.TimerOptions
	timersOn bool
	// timersPending runs bench.TimersPending instead, with this count.
	timersPending int
	// replicatedTime and replicatedRepeats size each replicated run.
	replicatedTime    time.Duration
	replicatedRepeats int
	// replicatedStores are the Raft log stores the group runs on.
	replicatedStores []string
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency against the machine's limits and NATS JetStream",
		Long: `bench runs the put, end-to-end, dispatch-lag, catch-up-read and recovery
workloads (package bench), each beside the physical bound measured in the same
run (memcpy into a mapping, pwrite+msync as the CommitLog syncs, read+CRC32), and
prints one Markdown table. A put and its bound run in alternation, and its ratio
is printed as min / median / max of the pairs'. With --peer it also runs the same produce/consume workloads
on NATS JetStream (the nested module bench/nats, through "go run") and shows
the ratio. Temporary stores are removed; a default run takes a few minutes,
--quick about half a minute.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "small sizes: a smoke run of about half a minute")
	f.StringVar(&o.out, "out", "", "also write bench.md and bench.json into `DIR`")
	f.StringVar(&o.plot, "plot", "", "draw throughput and latency charts into `FILE.png` (with go run in the bench/plot module: needs the go toolchain and the repository)")
	f.StringVar(&o.backend, "backend", "both", "backend to measure: mmap, memfs, both, or none (with --replicated: only the replicated group)")
	f.BoolVar(&o.peer, "peer", false, "also run NATS JetStream (needs the go toolchain and the repository)")
	f.StringVar(&o.tmp, "tmp", "", "parent `DIR` of the temporary stores (default: the system's temp dir)")
	f.BoolVar(&o.replicated, "replicated", false, "also send through a 3-replica broker group on loopback against one SYNC_FLUSH broker")
	f.DurationVar(&o.replicatedTime, "replicated-time", 10*time.Second, "--replicated: each measured run's length, after a 2 s warm-up")
	f.IntVar(&o.replicatedRepeats, "replicated-repeats", 3, "--replicated: runs of the single node and of the group, alternating (min/median/max)")
	f.StringSliceVar(&o.replicatedStores, "replicated-log-stores", []string{cluster.LogStoreWAL},
		"--replicated: the Raft log stores to run the group on, each beside the same single node (wal, raftlog, records; bound: the group's bound, no Raft)")
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
	f.BoolVar(&o.server.grpc, "server-grpc", false, "--server: also load rocketstore through its 5.x gRPC endpoint (one SendMessage a message; consumers receive and ack), alternating with remoting, then a gRPC echo server that stores nothing (the bound of any grpc-go server), and print the ratios")
	f.StringVar(&o.server.echoListen, "server-grpc-echo-listen", "", "serve bench's gRPC echo bound on `ADDR` until interrupted (bench --server --server-grpc starts it)")
	_ = f.MarkHidden("server-grpc-echo-listen")
	f.StringVar(&o.server.remotingEchoListen, "server-remoting-echo-listen", "", "serve the remoting echo bound on `ADDR` until interrupted: routes every topic to itself, answers sends SUCCESS and stores nothing (e2e's BenchmarkClientLoad with ROCKETSTORE_LOAD_TARGET=echo starts it)")
	_ = f.MarkHidden("server-remoting-echo-listen")
	f.BoolVar(&o.server.remotingEchoRaw, "server-remoting-echo-raw", false, "--server-remoting-echo-listen: the same answers without the remoting package (a goroutine a connection, headers scanned, not decoded)")
	_ = f.MarkHidden("server-remoting-echo-raw")
	f.IntVar(&o.server.repeat, "server-repeat", 1, "--server: run every configuration this many times (alternating the systems)")
	f.BoolVar(&o.timersOn, "timers", false, "instead: send timer messages due within a window and check every one is delivered once, never early, and how late")
	f.IntVar(&o.timers.Count, "timers-count", 100_000, "--timers: how many timer messages")
	f.DurationVar(&o.timers.Window, "timers-window", time.Minute, "--timers: the span of their delivery times")
	f.Int64Var(&o.timers.PrecisionMs, "timers-precision", 1000, "--timers: the broker's timerPrecisionMs")
	f.IntVar(&o.timersPending, "timers-pending", 0, "instead: send `N` timer messages due over --timers-window (from a minute on) and report their memory, files and a restart")
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
	if o.server.echoListen != "" {
		return serveGRPCEcho(ctx, o.server.echoListen)
	}
	if o.server.remotingEchoListen != "" {
		return serveRemotingEcho(ctx, o.server.remotingEchoListen, o.server.remotingEchoRaw)
	}
	if o.server.on {
		return runServerBench(ctx, cmd.OutOrStdout(), stderr, o)
	}
	if o.timersOn {
		return runTimerBench(ctx, cmd.OutOrStdout(), stderr, o)
	}
	if o.timersPending > 0 {
		fmt.Fprintf(stderr, "pending timers: %d due over %v\n", o.timersPending, o.timers.Window)
		rep, err := bench.TimersPending(ctx, o.timersPending, o.timers.Window, o.tmp)
		if err != nil {
			return err
		}
		return rep.WriteMarkdown(cmd.OutOrStdout())
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
		ro := bench.ReplicatedOptions{Dir: o.tmp, MoreProducers: o.replicatedMore, Time: o.replicatedTime, Repeats: o.replicatedRepeats,
			LogStores: o.replicatedStores}
		if o.quick { // a smoke run: one short pair
			ro.Warmup, ro.Time, ro.Repeats = 500*time.Millisecond, time.Second, 1
		}
		if ro.Time <= 0 || ro.Repeats <= 0 {
			return fmt.Errorf("--replicated-time %v, --replicated-repeats %d: want both positive", ro.Time, ro.Repeats)
		}
		for _, ls := range ro.LogStores {
			if ls != cluster.LogStoreWAL && ls != cluster.LogStoreRaftLog && ls != cluster.LogStoreRecords && ls != bench.ReplicatedBound {
				return fmt.Errorf("--replicated-log-stores %q: want %s, %s, %s or %s (no Raft: the bound of a group)", ls,
					cluster.LogStoreWAL, cluster.LogStoreRaftLog, cluster.LogStoreRecords, bench.ReplicatedBound)
			}
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
		if err := plotBench(ctx, stderr, o.plot, rep); err != nil {
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

// runTimerBench runs bench.Timers and fails when a check fails.
func runTimerBench(ctx context.Context, out, stderr io.Writer, o benchOptions) error {
	t := o.timers
	t.Dir = o.tmp
	if o.quick {
		t.Count, t.Window = min(t.Count, 5000), min(t.Window, 5*time.Second)
	}
	fmt.Fprintf(stderr, "timers: %d due within %v, timerPrecisionMs %d\n", t.Count, t.Window, t.PrecisionMs)
	rep, err := bench.Timers(ctx, t)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if !rep.Passed() {
		return errors.New("bench: the timer workload failed a check")
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
		if dir, err = findModule("nats"); err != nil {
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

// findModule looks for the nested module bench/NAME (its go.mod) in the
// working directory and its parents.
func findModule(name string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bench", name)
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("the bench/%s module was not found above the working directory (run from the repository%s)", name, map[bool]string{true: " or pass --peer-dir"}[name == "nats"])
		}
	}
}

// plotBench draws the report's charts into file with the bench/plot module
// (go run), which links the plotting library so that this binary does not.
func plotBench(ctx context.Context, stderr io.Writer, file string, rep *bench.Report) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return errors.New("the go toolchain is not on PATH (the charts are drawn by bench/plot with go run)")
	}
	dir, err := findModule("plot")
	if err != nil {
		return err
	}
	out, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		return err
	}
	c := exec.CommandContext(ctx, goBin, "run", ".", "-in", "-", "-out", out)
	c.Dir, c.Stdin, c.Stdout, c.Stderr = dir, &js, stderr, stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("go run in %s: %w", dir, err)
	}
	return nil
}
