// Command load is the NATS JetStream side of rocketstore's client load test
// (e2e/load_test.go, e2e/loadpeer_test.go): a real nats-server with
// JetStream file storage in a temp dir, listening on 127.0.0.1 (random
// port), loaded by nats.go clients over TCP loopback for a bounded time.
//
//   - 4 producer connections × 8 goroutines publish 256 B bodies with
//     synchronous JetStream publishes (js.Publish waits for the stream's ack,
//     the analogue of RocketMQ SendSync) for -duration;
//   - 2 consumer connections share one durable pull consumer with explicit
//     acks (the analogue of a clustering push-consumer group), consuming
//     with Consume and acking each message.
//
// Each body carries a sequence number and the send time (UnixNano, taken
// just before Publish). The run ends when every acknowledged publish has
// been consumed (or after -wait: then it exits 1). It prints sent and
// consumed msgs/s, publish-ack latency and publish→consume latency
// percentiles, failures and duplicates.
//
//	go run ./load [-duration 5s] [-sync] [-dir DIR] [-json]
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const producers, perProducer, consumers, bodySize = 4, 8, 2, 256

type result struct {
	SyncAlways       bool    `json:"sync_always"`
	Seconds          float64 `json:"duration_s"`
	Sent             int64   `json:"sent"`
	Failed           int64   `json:"failed"`
	SendSeconds      float64 `json:"send_s"`
	SentPerS         float64 `json:"sent_msgs_per_s"`
	Consumed         int64   `json:"consumed"`
	Dups             int64   `json:"dups"`
	Lost             int64   `json:"lost"`
	AllSeconds       float64 `json:"all_s"`
	ConsumedPerS     float64 `json:"consumed_msgs_per_s"`
	AckLatencyUs     []int64 `json:"ack_latency_us"`     // p50 p90 p99 p99.9 max
	ConsumeLatencyUs []int64 `json:"consume_latency_us"` // p50 p90 p99 p99.9 max
}

func main() {
	dur := flag.Duration("duration", 5*time.Second, "how long the producers publish")
	syncAlways := flag.Bool("sync", false, "JetStream sync_interval always (fsync every write)")
	dir := flag.String("dir", "", "parent of the temporary store directory")
	wait := flag.Duration("wait", 60*time.Second, "how long to wait for every acknowledged publish to be consumed")
	asJSON := flag.Bool("json", false, "print the result as JSON too")
	flag.Parse()
	r, err := run(*dur, *syncAlways, *dir, *wait)
	if r != nil {
		print(r)
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Println(string(b))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, syncAlways bool, parent string, wait time.Duration) (*result, error) {
	dir, err := os.MkdirTemp(parent, "rocketstore-load-nats-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, SyncAlways: syncAlways,
		JetStreamMaxMemory: 1 << 30, JetStreamMaxStore: 64 << 30}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	go srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		return nil, fmt.Errorf("nats-server not ready")
	}
	url := srv.ClientURL() // nats://127.0.0.1:<port>: TCP loopback
	connect := func(name string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := nats.Connect(url, nats.Name(name))
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
	ctx := context.Background()

	nc, js, err := connect("admin")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOAD", Subjects: []string{"load.>"},
		Storage: jetstream.FileStorage})
	if err != nil {
		return nil, err
	}
	_, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "GroupLoad",
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}

	// Consumers: 2 connections on the shared durable consumer.
	var (
		cmu      sync.Mutex
		seen     = map[int64]int32{}
		clat     []time.Duration
		consumed atomic.Int64
		signal   = make(chan struct{}, 1)
	)
	for i := range consumers {
		cnc, cjs, err := connect(fmt.Sprintf("consumer-%d", i))
		if err != nil {
			return nil, err
		}
		defer cnc.Close()
		c, err := cjs.Consumer(ctx, "LOAD", "GroupLoad")
		if err != nil {
			return nil, err
		}
		cc, err := c.Consume(func(m jetstream.Msg) {
			now := time.Now().UnixNano()
			d := m.Data()
			seq := int64(binary.BigEndian.Uint64(d[0:8]))
			sent := int64(binary.BigEndian.Uint64(d[8:16]))
			cmu.Lock()
			seen[seq]++
			if seen[seq] == 1 {
				clat = append(clat, time.Duration(now-sent))
			}
			cmu.Unlock()
			consumed.Add(1)
			_ = m.Ack() // fire-and-forget, as a push consumer commits offsets lazily
			select {
			case signal <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
	}

	// Producers: 4 connections × 8 goroutines of synchronous publishes.
	pubs := make([]jetstream.JetStream, producers)
	for i := range pubs {
		pnc, pjs, err := connect(fmt.Sprintf("producer-%d", i))
		if err != nil {
			return nil, err
		}
		defer pnc.Close()
		pubs[i] = pjs
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		acked    []int64
		failures atomic.Int64
		seq      atomic.Int64
		wg       sync.WaitGroup
	)
	start := time.Now()
	for _, p := range pubs {
		for g := range perProducer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				var ids []int64
				subj := fmt.Sprintf("load.q%d", g) // 8 subjects, like 8 queues
				for time.Since(start) < dur {
					id := seq.Add(1)
					body := make([]byte, bodySize)
					binary.BigEndian.PutUint64(body[0:8], uint64(id))
					t0 := time.Now()
					binary.BigEndian.PutUint64(body[8:16], uint64(t0.UnixNano()))
					pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					_, err := p.Publish(pctx, subj, body)
					cancel()
					if err != nil {
						failures.Add(1)
						continue
					}
					mine = append(mine, time.Since(t0))
					ids = append(ids, id)
				}
				mu.Lock()
				lat = append(lat, mine...)
				acked = append(acked, ids...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	sendTime := time.Since(start)

	missing := func() int64 {
		cmu.Lock()
		defer cmu.Unlock()
		var n int64
		for _, id := range acked {
			if seen[id] == 0 {
				n++
			}
		}
		return n
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lost := missing()
wait:
	for lost > 0 {
		select {
		case <-deadline.C:
			break wait
		case <-signal:
		case <-tick.C:
		}
		lost = missing()
	}
	allTime := time.Since(start)

	cmu.Lock()
	distinct := int64(len(seen))
	cl := slices.Clone(clat)
	cmu.Unlock()
	r := &result{SyncAlways: syncAlways, Seconds: dur.Seconds(), Sent: int64(len(acked)), Failed: failures.Load(),
		SendSeconds: sendTime.Seconds(), SentPerS: float64(len(acked)) / sendTime.Seconds(),
		Consumed: consumed.Load(), Dups: consumed.Load() - distinct, Lost: lost,
		AllSeconds: allTime.Seconds(), ConsumedPerS: float64(len(acked)) / allTime.Seconds(),
		AckLatencyUs: percentiles(lat), ConsumeLatencyUs: percentiles(cl)}
	if lost > 0 {
		return r, fmt.Errorf("%d of %d acknowledged publishes never consumed", lost, len(acked))
	}
	return r, nil
}

// percentiles returns p50, p90, p99, p99.9 and max in µs, indexed as the
// e2e load test does (lat[int(p*(n-1))]).
func percentiles(lat []time.Duration) []int64 {
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	var out []int64
	for _, p := range []float64{.5, .9, .99, .999} {
		out = append(out, lat[int(p*float64(len(lat)-1))].Microseconds())
	}
	return append(out, lat[len(lat)-1].Microseconds())
}

func print(r *result) {
	mode := "default sync interval"
	if r.SyncAlways {
		mode = "sync_interval always"
	}
	us := func(v []int64) string {
		if len(v) < 5 {
			return "n/a"
		}
		return fmt.Sprintf("p50 %dµs p90 %dµs p99 %dµs p99.9 %dµs max %dµs", v[0], v[1], v[2], v[3], v[4])
	}
	fmt.Printf("nats load: %d producers x %d goroutines, %d consumers, %d B bodies, %v, %s\n"+
		"  sent %d (failed %d) in %.3fs: %.0f msgs/s\n"+
		"  consumed %d (dups %d, lost %d) by %.3fs: %.0f msgs/s end to end\n"+
		"  publish ack latency %s\n"+
		"  publish->consume latency %s\n",
		producers, perProducer, consumers, bodySize, time.Duration(r.Seconds*float64(time.Second)), mode,
		r.Sent, r.Failed, r.SendSeconds, r.SentPerS,
		r.Consumed, r.Dups, r.Lost, r.AllSeconds, r.ConsumedPerS,
		us(r.AckLatencyUs), us(r.ConsumeLatencyUs))
}
