package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/bench"
)

// serverBenchOptions are the --server flags of `rocketstore bench`.
type serverBenchOptions struct {
	on        bool
	conns     int
	window    int
	queues    string
	batches   string
	sizes     string
	flush     string
	duration  time.Duration
	consumers bool
	repeat    int
	timeline  bool
	grpc      bool
	// echoListen serves the gRPC echo bound instead (a child of the
	// --server-grpc run).
	echoListen string
	// remotingEchoListen serves the remoting echo bound instead (a child
	// of e2e's client load).
	remotingEchoListen string
	remotingEchoRaw    bool // with remotingEchoListen: the raw echo
}

// runServerBench runs the server load (bench.RunServerLoad) against a
// `rocketstore serve` child process and, when the bench/nats module is
// found, against nats-server JetStream (also a child process), alternating
// the two for each configuration, and prints one table. It fails when any
// run fails.
func runServerBench(ctx context.Context, stdout, stderr io.Writer, o benchOptions) error {
	so := o.server
	var sizes []int
	for _, s := range strings.Split(so.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 16 {
			return fmt.Errorf("--server-sizes %q: want comma-separated byte counts >= 16", so.sizes)
		}
		sizes = append(sizes, n)
	}
	queues, err := positiveList("--server-queues", so.queues)
	if err != nil {
		return err
	}
	batches, err := positiveList("--server-pull-batch", so.batches)
	if err != nil {
		return err
	}
	flushes := strings.Split(so.flush, ",")
	for _, f := range flushes {
		if f != "async" && f != "sync" {
			return fmt.Errorf("--server-flush %q: want async, sync or async,sync", so.flush)
		}
	}
	peerDir, peerErr := o.peerDir, error(nil)
	if peerDir == "" {
		peerDir, peerErr = findModule("nats")
	}
	if peerErr != nil {
		fmt.Fprintf(stderr, "NATS side not run: %v\n", peerErr)
	}
	var results []bench.ServerResult
	failed := false
	for range max(1, so.repeat) {
		for _, flush := range flushes {
			for _, size := range sizes {
				l := bench.ServerLoad{Conns: so.conns, Window: so.window, Body: size, Duration: so.duration,
					Consumers: so.consumers, Flush: flush}
				for _, q := range queues {
					for _, b := range batches {
						fmt.Fprintf(stderr, "server load: rocketstore %d B %s %d×%d, %d queues a stream, pull batch %d\n",
							size, flush, so.conns, so.window, q, b)
						r := serverLoadRocketstore(ctx, stderr, o.tmp, o.out, q, b, false, l)
						results = append(results, r)
						failed = failed || r.Err != ""
						if so.grpc {
							fmt.Fprintf(stderr, "server load: rocketstore gRPC %d B %s %d×%d, %d queues a stream\n",
								size, flush, so.conns, so.window, q)
							r := serverLoadRocketstore(ctx, stderr, o.tmp, o.out, q, b, true, l)
							results = append(results, r)
							failed = failed || r.Err != ""
							fmt.Fprintf(stderr, "server load: gRPC echo bound %d B %d×%d\n", size, so.conns, so.window)
							r = serverLoadGRPCEcho(ctx, q, l)
							results = append(results, r)
							failed = failed || r.Err != ""
						}
					}
				}
				if peerErr == nil {
					fmt.Fprintf(stderr, "server load: nats %d B %s %d×%d\n", size, flush, so.conns, so.window)
					r := serverLoadNATS(ctx, stderr, peerDir, o.tmp, l)
					results = append(results, r)
					failed = failed || r.Err != ""
				}
			}
		}
	}
	writeServerTable(stdout, results)
	if so.repeat > 1 || so.grpc {
		writeServerSummary(stdout, results)
	}
	if peerErr != nil {
		// Under the table too: a reader of the saved output must not take
		// the missing rows for a comparison that was made.
		fmt.Fprintf(stdout, "\nNATS side not run: %v\n", peerErr)
	}
	if so.timeline {
		for _, r := range results {
			bench.WriteTimeline(stdout, r)
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(filepath.Join(o.out, "bench-server.json"), b, 0o644); err != nil {
			return err
		}
	}
	if failed {
		return errors.New("bench --server: a run failed (see the error column)")
	}
	return nil
}

// positiveList parses a comma-separated list of positive integers.
func positiveList(flag, v string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want comma-separated counts >= 1", flag, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// serverLoadRocketstore starts `rocketstore serve` on a fresh directory and
// loads it, each producer stream spread over queues queues whose consumer
// pulls batch messages at a time; with grpc, through the 5.x gRPC
// endpoint instead (bench.GRPCTarget: one SendMessage a message,
// consumers receive and ack up to 32 messages a call). A batch above the broker's default
// transfer limits (32 messages, 256 KiB from memory) raises them to match,
// as an operator serving such consumers would.
//
// serve's output (it logs warnings and errors only) goes to a file in out
// (--out) or else beside the run's temporary store in tmp; the file is
// kept, and its path printed to stderr, when serve logged anything, so
// that an error of a background service during a run is seen.
func serverLoadRocketstore(ctx context.Context, stderr io.Writer, tmp, out string, queues, batch int, grpc bool, l bench.ServerLoad) bench.ServerResult {
	system := "rocketstore"
	if grpc {
		system = systemGRPC
	}
	fail := func(err error) bench.ServerResult {
		return bench.ServerResult{System: system, Body: l.Body, Conns: l.Conns, Window: l.Window, Flush: l.Flush,
			Consumers: l.Consumers, Err: err.Error()}
	}
	dir, err := os.MkdirTemp(tmp, "rocketstore-bench-server-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	flush := "ASYNC_FLUSH"
	if l.Flush == "sync" {
		flush = "SYNC_FLUSH"
	}
	cfg := filepath.Join(dir, "broker.yaml")
	yaml := "flushDiskType: " + flush + "\n"
	if batch > bench.DefaultPullBatch {
		yaml += fmt.Sprintf("maxTransferCountOnMessageInMemory: %d\nmaxTransferBytesOnMessageInMemory: %d\n",
			batch, max(256<<10, batch*(l.Body+256)))
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return fail(err)
	}
	addr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	if bin := os.Getenv("ROCKETSTORE_SERVE_BIN"); bin != "" {
		exe = bin // another build's server under this build's driver (as e2e's BenchmarkClientLoad)
	}
	logs, err := newServeLog(tmp, out)
	if err != nil {
		return fail(err)
	}
	defer logs.close(stderr)
	grpcAddr := ""
	if grpc {
		if grpcAddr, err = freeAddr(); err != nil {
			return fail(err)
		}
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--dir", filepath.Join(dir, "data"), "--listen", addr,
		"--grpc-listen", grpcAddr, "--config", cfg, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logs.f, logs.f
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	for _, a := range []string{addr, grpcAddr} {
		if a == "" {
			continue
		}
		if err := waitListening(a, 15*time.Second); err != nil {
			return fail(fmt.Errorf("%w; serve said: %s", err, logs.text()))
		}
	}
	t := &bench.RemotingTarget{Addr: addr, PID: cmd.Process.Pid, Topic: "BenchServer", Group: "bench_consumer",
		QueuesPerStream: queues, PullBatch: batch}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := t.Prepare(pctx, l.Conns); err != nil {
		return fail(err)
	}
	if grpc {
		gt := &bench.GRPCTarget{Addr: grpcAddr, PID: cmd.Process.Pid, Topic: t.Topic, Group: t.Group, QueuesPerStream: queues}
		r := bench.RunServerLoad(gt, system, l)
		r.Shape = fmt.Sprintf("%d queues a stream × receive 32 + ack", queues)
		return r
	}
	r := bench.RunServerLoad(t, system, l)
	r.Shape = fmt.Sprintf("%d queues a stream × pull %d", queues, batch)
	return r
}

// systemGRPC names the results of rocketstore loaded through gRPC.
const systemGRPC = "rocketstore-grpc"

// serverLoadNATS runs the same load against nats-server with `go run` in
// the bench/nats module, which prints one bench.ServerResult as JSON.
func serverLoadNATS(ctx context.Context, stderr io.Writer, peerDir, tmp string, l bench.ServerLoad) bench.ServerResult {
	args := []string{"run", ".", "-server-load", "-conns", strconv.Itoa(l.Conns), "-window", strconv.Itoa(l.Window),
		"-body", strconv.Itoa(l.Body), "-duration", l.Duration.String(), "-flush", l.Flush,
		"-consumers=" + strconv.FormatBool(l.Consumers)}
	if tmp != "" {
		args = append(args, "-dir", tmp)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = peerDir
	cmd.Stderr = stderr
	out, err := cmd.Output()
	var r bench.ServerResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		if err == nil {
			err = jerr
		}
		return bench.ServerResult{System: "nats", Body: l.Body, Conns: l.Conns, Window: l.Window, Flush: l.Flush,
			Consumers: l.Consumers, Err: fmt.Sprintf("bench/nats: %v", err)}
	}
	return r
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after %v", addr, within)
}

func writeServerTable(w io.Writer, rs []bench.ServerResult) {
	fmt.Fprintln(w, "| system | shape | body | flush | conns × window | msgs/s | ack p50 / p99 / p99.9 ms | send→consume p50 / p99 / p99.9 ms | server CPU µs/msg | client CPU µs/msg | error |")
	fmt.Fprintln(w, "|---|---|--:|---|---|--:|---|---|--:|--:|---|")
	ms := func(l *bench.Latency) string {
		if l == nil || l.Samples == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f / %.2f / %.2f", l.P50/1e3, l.P99/1e3, l.P999/1e3)
	}
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %s | %d B | %s | %d × %d | %.0f | %s | %s | %.2f | %.2f | %s |\n", r.System, r.Shape, r.Body, r.Flush,
			r.Conns, r.Window, r.MsgsPerS, ms(r.Ack), ms(r.Consume), r.CPUPerMsg, r.ClientCPUPerMsg, r.Err)
	}
}

// serveLog is the file a `serve` child of the server bench writes its
// output to.
type serveLog struct {
	f *os.File
}

// newServeLog creates the log file in out when set, else in tmp (the
// system's temp dir when empty).
func newServeLog(tmp, out string) (*serveLog, error) {
	dir := tmp
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, err
		}
		dir = out
	}
	f, err := os.CreateTemp(dir, "rocketstore-bench-serve-*.log")
	if err != nil {
		return nil, fmt.Errorf("serve log: %w", err)
	}
	return &serveLog{f: f}, nil
}

// text returns what serve wrote so far (at most 64 KiB, for an error).
func (l *serveLog) text() string {
	b := make([]byte, 64<<10)
	n, _ := l.f.ReadAt(b, 0)
	return string(b[:n])
}

// close closes the file (after serve exited) and removes it when serve
// wrote nothing; otherwise it keeps it and says where it is.
func (l *serveLog) close(stderr io.Writer) {
	fi, err := l.f.Stat()
	_ = l.f.Close()
	if err == nil && fi.Size() == 0 {
		_ = os.Remove(l.f.Name())
		return
	}
	fmt.Fprintf(stderr, "server load: rocketstore serve logged warnings or errors: %s\n", l.f.Name())
}
