package e2e

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/engine"
)

// TestClientLoad loads the server with the official Go client through the
// load driver of `rocketstore bench --server` (bench.RunServerLoad): 4
// producers with 8 SendAsync each in flight (the shape of 4 clients × 8
// goroutines calling SendSync), 256 B bodies, and a consumer group of 2
// push consumers; every acknowledged message must be consumed. It logs
// msgs/s, ack and send→consume latency and this process's CPU per message
// (client and server together: the node runs in the test process). The
// NATS side of the same shape is
//
//	cd bench/nats && go run . -server-load -conns 4 -window 8 -body 256
//
// ROCKETSTORE_LOAD_SECONDS sets the send duration (5); ROCKETSTORE_LOAD_FLUSH=sync
// runs the store with SYNC_FLUSH (group commit).
func TestClientLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	dur := 5 * time.Second
	if v := os.Getenv("ROCKETSTORE_LOAD_SECONDS"); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ROCKETSTORE_LOAD_SECONDS=%q", v)
		}
		dur = time.Duration(s) * time.Second
	}
	flush, flushName := engine.AsyncFlush, "async"
	if os.Getenv("ROCKETSTORE_LOAD_FLUSH") == "sync" {
		flush, flushName = engine.SyncFlush, "sync"
	}
	n := nodeWithFlush(t, t.TempDir(), "127.0.0.1:0", flush)
	defer stopNode(t, n)
	tg := &clientTarget{t: t, addr: n.Addr, topic: "TopicLoad", consumers: 2}
	sendN(t, newProducer(t, n.Addr, producer.WithDefaultTopicQueueNums(8)), tg.topic, -1, 0, "") // create the topic
	r := bench.RunServerLoad(tg, "rocketstore (official Go client)",
		bench.ServerLoad{Conns: 4, Window: 8, Body: 256, Duration: dur, Consumers: true, Flush: flushName})
	ms := func(l *bench.Latency) string {
		if l == nil {
			return "n/a"
		}
		return strconv.FormatFloat(l.P50/1e3, 'f', 2, 64) + " / " + strconv.FormatFloat(l.P99/1e3, 'f', 2, 64) +
			" / " + strconv.FormatFloat(l.P999/1e3, 'f', 2, 64) + " ms"
	}
	t.Logf("official client load, %s flush, 4 × 8 in flight, 256 B: %d acked (%d failed) at %.0f msgs/s, %d consumed\n"+
		"  ack p50/p99/p99.9 %s; send→consume %s; client+server CPU %.1f µs/msg",
		flushName, r.Acked, r.Failed, r.MsgsPerS, r.Consumed, ms(r.Ack), ms(r.Consume), r.CPUPerMsg)
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if r.Acked == 0 {
		t.Fatal("nothing acknowledged")
	}
}

// clientTarget is a bench.LoadTarget on the official Go client: producers
// send with SendAsync; Consume starts the group's push consumers (the
// first `consumers` streams; the group shares the whole topic).
type clientTarget struct {
	t         *testing.T
	addr      string
	topic     string
	consumers int
}

func (c *clientTarget) ServerCPU() (time.Duration, error) { return bench.ProcessCPU(os.Getpid()) }

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
