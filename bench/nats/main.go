// Command nats runs rocketstore's produce/consume workloads on NATS
// JetStream — nats-server embedded in this process with file storage,
// published and consumed with nats.go over an in-process connection — and
// prints the results as a JSON array of bench.Result on stdout.
//
// It lives in its own module so that importing rocketstore pulls in no
// NATS dependency; `rocketstore bench --peer` runs it with `go run` and
// merges its figures into the table.
//
//	go run . [-quick] [-dir DIR]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rocketstore/rocketstore/bench"
)

func main() {
	quick := flag.Bool("quick", false, "the --quick sizes")
	dir := flag.String("dir", "", "parent of the temporary store directory")
	// rocketstore bench --server: the server load (serverload.go).
	load := flag.Bool("server-load", false, "run the server load generator against a nats-server child process")
	conns := flag.Int("conns", 4, "server load: producer connections")
	window := flag.Int("window", 256, "server load: messages in flight per connection")
	body := flag.Int("body", 128, "server load: body bytes")
	duration := flag.Duration("duration", 5*time.Second, "server load: how long producers send")
	flush := flag.String("flush", "async", "server load: async or sync (nats-server sync_interval always)")
	consumers := flag.Bool("consumers", true, "server load: one pull consumer per producer subject")
	serve := flag.Bool("nats-serve", false, "internal: run nats-server until stdin closes")
	port := flag.Int("port", 0, "internal: -nats-serve port")
	syncAlways := flag.Bool("sync", false, "internal: -nats-serve with sync_interval always")
	flag.Parse()
	if *serve {
		if err := natsServe(*port, *dir, *syncAlways); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *load {
		l := bench.ServerLoad{Conns: *conns, Window: *window, Body: *body, Duration: *duration, Consumers: *consumers, Flush: *flush}
		if err := serverLoad(*dir, l); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	sp := bench.DefaultSpec(*quick)
	results := run(sp, *dir)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(sp bench.Spec, parent string) []bench.Result {
	var out []bench.Result
	add := func(r bench.Result, err error) {
		if err != nil {
			r.Err = err.Error()
		}
		out = append(out, r)
	}
	for _, sync := range []bool{false, true} {
		flush := "async"
		if sync {
			flush = "sync"
		}
		p, err := startPeer(parent, sync)
		for _, body := range sp.BodySizes {
			for _, n := range sp.Producers {
				stub := bench.Result{Group: bench.GroupPut, Backend: "nats", Body: body, Producers: n, Flush: flush}
				progress(stub)
				if err != nil {
					add(stub, err)
					continue
				}
				maxTime := sp.PutTime
				if sync {
					maxTime = sp.SyncTime
				}
				add(p.put(stub, sp.PutCount(body), maxTime, sync))
			}
		}
		if err == nil && !sync {
			for _, body := range sp.BodySizes {
				stub := bench.Result{Group: bench.GroupE2E, Backend: "nats", Body: body, Producers: 1}
				progress(stub)
				add(p.e2e(stub, sp.E2EMsgs, sp.LatencyRate, sp.LatencyTime))
			}
			stub := bench.Result{Group: bench.GroupCatchUp, Backend: "nats", Body: sp.BacklogBody}
			progress(stub)
			add(p.catchUp(stub, sp.BacklogMsgs()))
		}
		if p != nil {
			p.close()
		}
	}
	return out
}

func progress(r bench.Result) { fmt.Fprintf(os.Stderr, "nats: %s\n", r.Name()) }

// peer is an embedded JetStream server with its file store in dir.
type peer struct {
	dir string
	srv *server.Server
}

func startPeer(parent string, syncAlways bool) (*peer, error) {
	dir, err := os.MkdirTemp(parent, "rocketstore-bench-nats-")
	if err != nil {
		return nil, err
	}
	opts := &server.Options{JetStream: true, StoreDir: dir, DontListen: true, NoLog: true, NoSigs: true,
		SyncAlways: syncAlways, JetStreamMaxMemory: 1 << 30, JetStreamMaxStore: 64 << 30}
	srv, err := server.NewServer(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nats-server not ready")
	}
	return &peer{dir: dir, srv: srv}, nil
}

func (p *peer) close() {
	p.srv.Shutdown()
	p.srv.WaitForShutdown()
	os.RemoveAll(p.dir)
}

func (p *peer) connect() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect("", nats.InProcessServer(p.srv))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// stream creates a fresh file-backed stream BENCH on subjects bench.>.
func (p *peer) stream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	_ = js.DeleteStream(ctx, "BENCH")
	return js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"},
		Storage: jetstream.FileStorage})
}

// publisher publishes asynchronously (JetStream's fast path: acks are
// pipelined, up to the default window of 4,000 in flight).
type publisher struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	errs atomic.Int64
}

func (p *peer) publisher(window int) (*publisher, error) {
	nc, err := nats.Connect("", nats.InProcessServer(p.srv))
	if err != nil {
		return nil, err
	}
	pub := &publisher{nc: nc}
	opts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) {
		pub.errs.Add(1)
	})}
	if window > 0 {
		opts = append(opts, jetstream.WithPublishAsyncMaxPending(window))
	}
	pub.js, err = jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return pub, nil
}

// stall lets a publisher wait for its window to drain (sync-always acks
// come at fsync speed) instead of failing after the default 200 ms.
var stall = jetstream.WithStallWait(time.Minute)

// wait returns once every published message is acknowledged.
func (pub *publisher) wait() error {
	select {
	case <-pub.js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("publish acks timed out")
	}
	if n := pub.errs.Load(); n > 0 {
		return fmt.Errorf("%d publishes failed", n)
	}
	return nil
}

// put publishes up to msgs messages from producers connections, each to
// its own subject, for at most maxTime, and waits for every ack.
func (p *peer) put(r bench.Result, msgs int, maxTime time.Duration, syncAlways bool) (bench.Result, error) {
	ctx := context.Background()
	nc, js, err := p.connect()
	if err != nil {
		return r, err
	}
	defer nc.Close()
	if _, err := p.stream(ctx, js); err != nil {
		return r, err
	}
	pubs := make([]*publisher, r.Producers)
	for i := range pubs {
		window := 0 // nats.go's default, 4,000
		if syncAlways {
			// Acks come at fsync speed: a smaller window keeps the run
			// within its time bound (acks still pipeline 256 deep).
			window = 256
		}
		if pubs[i], err = p.publisher(window); err != nil {
			return r, err
		}
		defer pubs[i].nc.Close()
	}
	per := (msgs + r.Producers - 1) / r.Producers
	var total atomic.Int64
	errs := make([]error, r.Producers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(maxTime)
	for i, pub := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := make([]byte, r.Body)
			subj := fmt.Sprintf("bench.p%d", i)
			n := 0
			for ; n < per; n++ {
				if (syncAlways || n&127 == 0) && time.Now().After(deadline) {
					break
				}
				if _, err := pub.js.PublishAsync(subj, body, stall); err != nil {
					errs[i] = err
					break
				}
			}
			if err := pub.wait(); err != nil && errs[i] == nil {
				errs[i] = err
			}
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return r, err
		}
	}
	return finish(r, total.Load(), elapsed), nil
}

func finish(r bench.Result, n int64, d time.Duration) bench.Result {
	r.Msgs, r.BodyBytes, r.Seconds = n, n*int64(r.Body), d.Seconds()
	r.MsgsPerS = float64(n) / r.Seconds
	r.MBPerS = float64(r.BodyBytes) / r.Seconds / 1e6
	return r
}

// counter is a consumer's progress: got messages so far, and a signal
// whenever got reaches want.
type counter struct {
	got, want atomic.Int64
	reached   chan struct{}
}

func (c *counter) add() {
	if c.got.Add(1) >= c.want.Load() {
		select {
		case c.reached <- struct{}{}:
		default:
		}
	}
}

func (c *counter) await(want int64, send func() error) error {
	c.want.Store(want)
	if err := send(); err != nil {
		return err
	}
	timeout := time.After(2 * time.Minute)
	// A signal left from an earlier phase only costs a re-check.
	for c.got.Load() < want {
		select {
		case <-c.reached:
		case <-timeout:
			return fmt.Errorf("consumer got %d of %d messages", c.got.Load(), want)
		}
	}
	return nil
}

// consumer creates a pull consumer (no acks, as rocketstore's GetMessage
// needs none) delivering everything in the stream to handle.
func (p *peer) consumer(ctx context.Context, js jetstream.JetStream, handle func(jetstream.Msg)) (jetstream.ConsumeContext, error) {
	st, err := js.Stream(ctx, "BENCH")
	if err != nil {
		return nil, err
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	return cons.Consume(handle)
}

// e2e mirrors rocketstore's end-to-end workload: one producer and one
// consumer, unthrottled for msgs messages, then paced at rate for dur with
// the put-to-consume latency of every message recorded.
func (p *peer) e2e(r bench.Result, msgs, rate int, dur time.Duration) (bench.Result, error) {
	ctx := context.Background()
	nc, js, err := p.connect()
	if err != nil {
		return r, err
	}
	defer nc.Close()
	if _, err := p.stream(ctx, js); err != nil {
		return r, err
	}
	pub, err := p.publisher(0)
	if err != nil {
		return r, err
	}
	defer pub.nc.Close()
	c := &counter{reached: make(chan struct{}, 1)}
	var hist atomic.Pointer[bench.Histogram]
	cc, err := p.consumer(ctx, js, func(m jetstream.Msg) {
		if h := hist.Load(); h != nil {
			h.Record(bench.Since(m.Data()))
		}
		c.add()
	})
	if err != nil {
		return r, err
	}
	defer cc.Stop()
	body := make([]byte, max(r.Body, 8))
	send := func(n int, pace *bench.Pacer) func() error {
		return func() error {
			for i := 0; i < n; i++ {
				if pace != nil {
					pace.Wait()
				}
				bench.Stamp(body)
				if _, err := pub.js.PublishAsync("bench.e2e", body, stall); err != nil {
					return err
				}
			}
			return pub.wait()
		}
	}
	if err := c.await(1000, send(1000, nil)); err != nil {
		return r, err
	}
	start := time.Now()
	if err := c.await(int64(1000+msgs), send(msgs, nil)); err != nil {
		return r, err
	}
	elapsed := time.Since(start)
	h := bench.NewHistogram()
	hist.Store(h)
	paced := int(float64(rate) * dur.Seconds())
	if err := c.await(int64(1000+msgs+paced), send(paced, bench.NewPacer(rate))); err != nil {
		return r, err
	}
	r = finish(r, int64(msgs), elapsed)
	r.Latency = h.Latency()
	return r, nil
}

// catchUp publishes a backlog of n messages, then times one consumer that
// reads it all, copying each message out.
func (p *peer) catchUp(r bench.Result, n int64) (bench.Result, error) {
	ctx := context.Background()
	nc, js, err := p.connect()
	if err != nil {
		return r, err
	}
	defer nc.Close()
	if _, err := p.stream(ctx, js); err != nil {
		return r, err
	}
	pub, err := p.publisher(0)
	if err != nil {
		return r, err
	}
	body := make([]byte, r.Body)
	for i := int64(0); i < n; i++ {
		if _, err := pub.js.PublishAsync("bench.backlog", body, stall); err != nil {
			pub.nc.Close()
			return r, err
		}
	}
	err = pub.wait()
	pub.nc.Close()
	if err != nil {
		return r, err
	}
	c := &counter{reached: make(chan struct{}, 1)}
	buf := make([]byte, 2*r.Body)
	c.want.Store(n)
	start := time.Now()
	cc, err := p.consumer(ctx, js, func(m jetstream.Msg) {
		copy(buf, m.Data())
		c.add()
	})
	if err != nil {
		return r, err
	}
	defer cc.Stop()
	if err := c.await(n, func() error { return nil }); err != nil {
		return r, err
	}
	return finish(r, n, time.Since(start)), nil
}
