package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// Several real clients load the server over loopback for a bounded time:
// every acknowledged message is consumed. The test logs throughput and
// send latency percentiles (go test -v -run TestLoad).
func TestLoadSeveralClients(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	dur := 5 * time.Second
	if v := os.Getenv("ROCKETSTORE_LOAD_SECONDS"); v != "" {
		s, _ := strconv.Atoi(v)
		dur = time.Duration(s) * time.Second
	}
	const producers, perProducer, consumers = 4, 8, 2
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	topic := "TopicLoad"
	ps := make([]producerAPI, producers)
	for i := range ps {
		ps[i] = newProducer(t, n.Addr, producer.WithDefaultTopicQueueNums(8))
	}
	sendN(t, ps[0], topic, -1, 0, "") // create the topic

	col := newCollector()
	var consumed atomic.Int64
	for i := range consumers {
		c := startConsumer(t, consumerOpts(n.Addr, "GroupLoad", consumer.WithPullBatchSize(32)), topic, consumer.MessageSelector{},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				for _, m := range msgs {
					col.add(m)
				}
				consumed.Add(int64(len(msgs)))
				return consumer.ConsumeSuccess, nil
			})
		defer c.Shutdown()
		_ = i
	}

	body := make([]byte, 256)
	var mu sync.Mutex
	var lat []time.Duration
	var acked []string
	var failures atomic.Int64
	var seq atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range ps {
		for range perProducer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				var ids []string
				for time.Since(start) < dur {
					id := strconv.FormatInt(seq.Add(1), 10)
					m := primitive.NewMessage(topic, body)
					m.WithProperty("seq", id)
					t0 := time.Now()
					_, err := p.SendSync(context.Background(), m)
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
	ok := col.waitFor(t, 60*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return !slices.ContainsFunc(acked, func(id string) bool { return len(col.msgs[id]) == 0 })
	})
	allTime := time.Since(start)
	if !ok {
		t.Fatalf("consumed %d of %d acknowledged", col.distinct(), len(acked))
	}
	col.mu.Lock()
	for _, id := range acked {
		if len(col.msgs[id]) == 0 {
			t.Errorf("acknowledged message %s never consumed", id)
		}
	}
	col.mu.Unlock()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	report := fmt.Sprintf("load: %d producers x %d goroutines, %d consumers, %d B bodies, %v\n"+
		"  sent %d (failed %d) in %v: %.0f msgs/s\n"+
		"  consumed %d (dups %d) by %v: %.0f msgs/s end to end\n"+
		"  SendSync latency p50 %v p90 %v p99 %v p99.9 %v max %v",
		producers, perProducer, consumers, len(body), dur,
		len(acked), failures.Load(), sendTime.Round(time.Millisecond), float64(len(acked))/sendTime.Seconds(),
		consumed.Load(), consumed.Load()-int64(col.distinct()), allTime.Round(time.Millisecond), float64(len(acked))/allTime.Seconds(),
		pct(.5), pct(.9), pct(.99), pct(.999), lat[len(lat)-1])
	t.Log(report)
}
