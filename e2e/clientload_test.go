package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/bench"
)

// BenchmarkClientLoad loads the server with the official Go client through the
// load driver of `rocketstore bench --server` (bench.RunServerLoad): 4
// producers with 8 SendAsync each in flight (the shape of 4 clients × 8
// goroutines calling SendSync), 256 B bodies, and a consumer group of 4
// push consumers (one a producer, as the NATS side has one pull consumer a
// producer's subject); every acknowledged message must be consumed. The server
// is `rocketstore serve` in a child process (built from this checkout), so
// that /proc splits the CPU: it logs msgs/s, ack and send→consume latency,
// the client's CPU per message (this process: the official client's
// producers and consumers and the driver) and the server's (the child). The
// NATS side of the same shape is
//
//	cd bench/nats && go run . -server-load -conns 4 -window 8 -body 256
//
// ROCKETSTORE_LOAD_SECONDS sets the send duration (5); ROCKETSTORE_LOAD_FLUSH=sync
// runs the store with SYNC_FLUSH (group commit); ROCKETSTORE_LOAD_CONSUMERS=0
// runs the producers alone (the NATS side's -consumers=false);
// ROCKETSTORE_LOAD_TARGET=echo loads the remoting echo bound instead of
// serve (echoChild, producers alone): serve's transport and header
// decoding with no broker behind them, what serve spends a message at
// least under this client's pattern; ROCKETSTORE_LOAD_TARGET=rawecho
// the same answers without the remoting package, what a Go server spends
// at least. Each iteration is one
// load of that duration, so run it once:
//
//	cd e2e && go test -run '^$' -bench ClientLoad -benchtime 1x
//
// It reports msgs/s, the ack and send→consume p99 and the CPU per message
// as benchmark metrics besides the log.
func BenchmarkClientLoad(b *testing.B) {
	dur := 5 * time.Second
	if v := os.Getenv("ROCKETSTORE_LOAD_SECONDS"); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("ROCKETSTORE_LOAD_SECONDS=%q", v)
		}
		dur = time.Duration(s) * time.Second
	}
	flushName := "async"
	if os.Getenv("ROCKETSTORE_LOAD_FLUSH") == "sync" {
		flushName = "sync"
	}
	consumers := os.Getenv("ROCKETSTORE_LOAD_CONSUMERS") != "0"
	var addr, metrics, system string
	var pid int
	switch target := os.Getenv("ROCKETSTORE_LOAD_TARGET"); target {
	case "", "serve":
		addr, pid, metrics = serveChild(b, flushName)
		system = "rocketstore (official Go client)"
	case "echo", "rawecho":
		addr, pid = echoChild(b, loadBinary(b), target == "rawecho")
		system, flushName, consumers = target+" (official Go client)", "none", false
	default:
		b.Fatalf("ROCKETSTORE_LOAD_TARGET=%q: want serve, echo or rawecho", target)
	}
	tg := &clientTarget{t: b, addr: addr, topic: "TopicLoad", serverPID: pid}
	if consumers {
		tg.consumers = 4
	}
	sendN(b, newProducer(b, addr, producer.WithDefaultTopicQueueNums(8)), tg.topic, -1, 0, "") // create the topic
	b.ResetTimer()
	var r bench.ServerResult
	for range b.N {
		r = bench.RunServerLoad(tg, system,
			bench.ServerLoad{Conns: 4, Window: 8, Body: 256, Duration: dur, Consumers: consumers, Flush: flushName})
		if r.Err != "" {
			b.Fatal(r.Err)
		}
	}
	b.StopTimer()
	ms := func(l *bench.Latency) string {
		if l == nil {
			return "n/a"
		}
		return strconv.FormatFloat(l.P50/1e3, 'f', 2, 64) + " / " + strconv.FormatFloat(l.P99/1e3, 'f', 2, 64) +
			" / " + strconv.FormatFloat(l.P999/1e3, 'f', 2, 64) + " ms"
	}
	b.Logf("%s, %s flush, 4 × 8 in flight, 256 B: %d acked (%d failed) at %.0f msgs/s, %d consumed\n"+
		"  ack p50/p99/p99.9 %s; send→consume %s; CPU µs/msg: server %.1f, client %.1f",
		system, flushName, r.Acked, r.Failed, r.MsgsPerS, r.Consumed, ms(r.Ack), ms(r.Consume), r.CPUPerMsg, r.ClientCPUPerMsg)
	if k, err := kernelCounts(pid); err == nil && r.Acked > 0 {
		n := float64(r.Acked)
		b.Logf("server per message: %.2f read-type and %.2f write-type syscalls, %.2f context switches (whole run, from /proc)",
			float64(k.syscr)/n, float64(k.syscw)/n, float64(k.ctxsw)/n)
	}
	if metrics != "" {
		pulls, pulled, byCode := pullCounts(b, metrics)
		b.Logf("server: %.0f pulls answered, %.0f messages pulled (%.1f a pull); requests by code: %s",
			pulls, pulled, pulled/max(1, pulls), strings.Join(byCode, " "))
	}
	if r.Acked == 0 {
		b.Fatal("nothing acknowledged")
	}
	b.ReportMetric(r.MsgsPerS, "msgs/s")
	b.ReportMetric(r.CPUPerMsg, "server-CPU-µs/msg")
	b.ReportMetric(r.ClientCPUPerMsg, "client-CPU-µs/msg")
	if r.Ack != nil {
		b.ReportMetric(r.Ack.P99/1e3, "ack-p99-ms")
	}
	if r.Consume != nil {
		b.ReportMetric(r.Consume.P99/1e3, "consume-p99-ms")
	}
}

// loadBinary builds `rocketstore` from this checkout, or takes the binary
// ROCKETSTORE_SERVE_BIN names (e.g. to profile it with perf).
func loadBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("ROCKETSTORE_SERVE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "rocketstore")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rocketstore")
	build.Dir = ".." // the library module, with the command's own dependencies
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// serveChild runs `rocketstore serve` (loadBinary; with
// ROCKETSTORE_SERVE_PPROF=ADDR it serves Go's profiler there) on a fresh
// directory with the given flush ("async" or "sync") until the test
// ends; it returns the address, the process id and the address of its
// Prometheus metrics.
func serveChild(t testing.TB, flush string) (addr string, pid int, metrics string) {
	t.Helper()
	bin := loadBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "broker.yaml")
	if err := os.WriteFile(cfg, []byte("flushDiskType: "+strings.ToUpper(flush)+"_FLUSH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, metrics = freeAddr(t), freeAddr(t)
	args := []string{"serve", "--dir", filepath.Join(dir, "data"), "--listen", addr, "--config", cfg,
		"--metrics", metrics, "--log-level", "warn"}
	if pp := os.Getenv("ROCKETSTORE_SERVE_PPROF"); pp != "" {
		args = append(args, "--pprof", pp) // to profile serve under the load: go tool pprof http://PP/debug/pprof/profile
	}
	return addr, startChild(t, addr, bin, args...), metrics
}

// echoChild runs the remoting echo bound (bin `bench
// --server-remoting-echo-listen`: routes every topic to itself, answers
// sends SUCCESS, stores nothing; raw: the same answers without the
// remoting package) until the test ends; it returns the address and the
// process id.
func echoChild(t testing.TB, bin string, raw bool) (addr string, pid int) {
	t.Helper()
	addr = freeAddr(t)
	return addr, startChild(t, addr, bin, "bench", "--server-remoting-echo-listen", addr,
		"--server-remoting-echo-raw="+strconv.FormatBool(raw))
}

// startChild starts bin with args, stops it (SIGTERM) when the test ends,
// and returns its process id once addr answers.
func startChild(t testing.TB, addr, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s did not start listening", bin, args[0])
		}
	}
}

// procCounts are a process's system calls and context switches so far.
type procCounts struct{ syscr, syscw, ctxsw int64 }

// kernelCounts reads pid's read- and write-type system calls from
// /proc/PID/io and its threads' context switches (voluntary and not) from
// /proc/PID/task/*/status: the wake-ups a request costs the server.
func kernelCounts(pid int) (procCounts, error) {
	var k procCounts
	ioText, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return k, err
	}
	for _, line := range strings.Split(string(ioText), "\n") {
		name, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch name {
		case "syscr":
			k.syscr = n
		case "syscw":
			k.syscw = n
		}
	}
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil {
		return k, err
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(name, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				k.ctxsw += n
			}
		}
	}
	return k, nil
}

// pullCounts reads the pull requests answered and the messages they
// carried from the server's metrics, and the requests received by
// request code ("code=count"), so that a run shows every kind of traffic
// the client sends besides sends and pulls.
func pullCounts(t testing.TB, metrics string) (pulls, msgs float64, byCode []string) {
	t.Helper()
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(f[0], "rocketstore_pulls_total{"):
			pulls += v
		case f[0] == "rocketstore_pulled_messages_total":
			msgs += v
		case strings.HasPrefix(f[0], "rocketstore_requests_total{"):
			code := strings.TrimSuffix(strings.TrimPrefix(f[0], `rocketstore_requests_total{code="`), `"}`)
			byCode = append(byCode, code+"="+f[1])
		}
	}
	return pulls, msgs, byCode
}

// clientTarget is a bench.LoadTarget on the official Go client: producers
// send with SendAsync; Consume starts the group's push consumers (the
// first `consumers` streams; the group shares the whole topic).
type clientTarget struct {
	t         testing.TB
	addr      string
	topic     string
	consumers int
	serverPID int
}

func (c *clientTarget) ServerCPU() (time.Duration, error) { return bench.ProcessCPU(c.serverPID) }

func (c *clientTarget) Producer(int) (bench.LoadProducer, error) {
	p := newProducer(c.t, c.addr, producer.WithDefaultTopicQueueNums(8))
	return &clientProducer{p: p.(asyncProducer), topic: c.topic}, nil
}

type asyncProducer interface {
	producerAPI
	SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), msg ...*primitive.Message) error
}

type clientProducer struct {
	p     asyncProducer
	topic string
}

func (p *clientProducer) Send(body []byte, done func(error)) error {
	msg := primitive.NewMessage(p.topic, append([]byte(nil), body...))
	return p.p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
		if err == nil && r.Status != primitive.SendOK {
			err = &sendStatusError{r.Status}
		}
		done(err)
	}, msg)
}

func (p *clientProducer) Close() error { return nil } // newProducer's cleanup shuts it down

type sendStatusError struct{ s primitive.SendStatus }

func (e *sendStatusError) Error() string { return "send status " + strconv.Itoa(int(e.s)) }

func (c *clientTarget) Consume(i int, fn func([]byte)) (func(), error) {
	if i >= c.consumers {
		return func() {}, nil
	}
	var mu sync.Mutex // the driver's fn is called from one goroutine per stream
	pc := startConsumer(c.t, consumerOpts(c.addr, "GroupLoad", consumer.WithPullBatchSize(32)), c.topic, consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if len(m.Body) >= 16 { // not the topic-creating message
					fn(m.Body)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	return func() { _ = pc.Shutdown() }, nil
}

// TestRemotingEchoServesTheOfficialClient: the official Go client sends
// through the remoting echoes as through serve (route, heartbeat, every
// SendSync answered SEND_OK on the queue it picked, the queues in turn),
// so their CPU a message under BenchmarkClientLoad bounds serve's.
func TestRemotingEchoServesTheOfficialClient(t *testing.T) {
	t.Parallel()
	bin := loadBinary(t)
	t.Run("remoting", func(t *testing.T) { testEchoServesTheOfficialClient(t, bin, false) })
	t.Run("raw", func(t *testing.T) { testEchoServesTheOfficialClient(t, bin, true) })
}

func testEchoServesTheOfficialClient(t *testing.T, bin string, raw bool) {
	addr, _ := echoChild(t, bin, raw)
	p := newProducer(t, addr, producer.WithDefaultTopicQueueNums(8))
	queues := map[int]int{}
	for i := range 32 {
		r, err := p.SendSync(context.Background(), primitive.NewMessage("TopicLoad", []byte("echo-"+strconv.Itoa(i))))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if r.Status != primitive.SendOK || r.MessageQueue == nil || r.OffsetMsgID == "" || r.QueueOffset != int64(i) {
			t.Fatalf("send %d: %+v", i, r)
		}
		queues[r.MessageQueue.QueueId]++
	}
	if len(queues) != 8 {
		t.Fatalf("sends by queue %v: want all 8 of the echo's route", queues)
	}
}
