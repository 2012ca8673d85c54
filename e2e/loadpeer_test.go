package e2e

import (
	"context"
	"encoding/binary"
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

	"github.com/rocketstore/rocketstore/engine"
)

// TestPeerLoad is TestLoadSeveralClients with the timing conventions of
// the NATS JetStream peer (bench/nats/load): each 256 B body carries a
// sequence number and the send time (UnixNano, taken just before
// SendSync), so that besides the SendSync (ack) latency it reports the
// send→consume latency, measured when the push consumer's callback sees
// the message. Percentiles are lat[int(p*(n-1))] of the sorted latencies
// in both. It runs only with ROCKETSTORE_LOAD_PEER=1:
//
//	cd e2e && ROCKETSTORE_LOAD_PEER=1 go test -v -run TestPeerLoad
//
// ROCKETSTORE_LOAD_SECONDS sets the send duration (5); ROCKETSTORE_LOAD_FLUSH=sync
// runs the store with SYNC_FLUSH (group commit), the analogue of
// JetStream's sync_interval always.
func TestPeerLoad(t *testing.T) {
	if testing.Short() || os.Getenv("ROCKETSTORE_LOAD_PEER") == "" {
		t.Skip("peer load comparison: set ROCKETSTORE_LOAD_PEER=1")
	}
	dur := 5 * time.Second
	if v := os.Getenv("ROCKETSTORE_LOAD_SECONDS"); v != "" {
		s, _ := strconv.Atoi(v)
		dur = time.Duration(s) * time.Second
	}
	flush := engine.AsyncFlush
	if os.Getenv("ROCKETSTORE_LOAD_FLUSH") == "sync" {
		flush = engine.SyncFlush
	}
	const producers, perProducer, consumers = 4, 8, 2
	n := nodeWithFlush(t, t.TempDir(), "127.0.0.1:0", flush)
	defer stopNode(t, n)
	topic := "TopicLoad"
	ps := make([]producerAPI, producers)
	for i := range ps {
		ps[i] = newProducer(t, n.Addr, producer.WithDefaultTopicQueueNums(8))
	}
	sendN(t, ps[0], topic, -1, 0, "") // create the topic

	var (
		cmu      sync.Mutex
		seen     = map[int64]int32{}
		clat     []time.Duration
		consumed atomic.Int64
	)
	for range consumers {
		c := startConsumer(t, consumerOpts(n.Addr, "GroupLoad", consumer.WithPullBatchSize(32)), topic, consumer.MessageSelector{},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				now := time.Now().UnixNano()
				cmu.Lock()
				for _, m := range msgs {
					if len(m.Body) < 16 {
						continue // the topic-creating message
					}
					seq := int64(binary.BigEndian.Uint64(m.Body[0:8]))
					sent := int64(binary.BigEndian.Uint64(m.Body[8:16]))
					seen[seq]++
					if seen[seq] == 1 {
						clat = append(clat, time.Duration(now-sent))
					}
					consumed.Add(1)
				}
				cmu.Unlock()
				return consumer.ConsumeSuccess, nil
			})
		defer c.Shutdown()
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
	for _, p := range ps {
		for range perProducer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				var ids []int64
				for time.Since(start) < dur {
					id := seq.Add(1)
					body := make([]byte, 256)
					binary.BigEndian.PutUint64(body[0:8], uint64(id))
					t0 := time.Now()
					binary.BigEndian.PutUint64(body[8:16], uint64(t0.UnixNano()))
					_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body))
					if err != nil {
						if failures.Add(1) <= 3 {
							t.Logf("SendSync %d: %v", id, err)
						}
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
	missing := func() int {
		cmu.Lock()
		defer cmu.Unlock()
		k := 0
		for _, id := range acked {
			if seen[id] == 0 {
				k++
			}
		}
		return k
	}
	deadline := time.Now().Add(60 * time.Second)
	lost := missing()
	for lost > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		lost = missing()
	}
	allTime := time.Since(start)
	if lost > 0 {
		t.Errorf("%d of %d acknowledged messages never consumed", lost, len(acked))
	}
	cmu.Lock()
	distinct := int64(len(seen))
	cl := slices.Clone(clat)
	cmu.Unlock()
	us := func(l []time.Duration) string {
		if len(l) == 0 {
			return "n/a"
		}
		slices.Sort(l)
		p := func(q float64) int64 { return l[int(q*float64(len(l)-1))].Microseconds() }
		return fmt.Sprintf("p50 %dµs p90 %dµs p99 %dµs p99.9 %dµs max %dµs", p(.5), p(.9), p(.99), p(.999), l[len(l)-1].Microseconds())
	}
	t.Logf("rocketstore load: %d producers x %d goroutines, %d consumers, 256 B bodies, %v, %v\n"+
		"  sent %d (failed %d) in %.3fs: %.0f msgs/s\n"+
		"  consumed %d (dups %d, lost %d) by %.3fs: %.0f msgs/s end to end\n"+
		"  SendSync latency %s\n"+
		"  send->consume latency %s",
		producers, perProducer, consumers, dur, flush,
		len(acked), failures.Load(), sendTime.Seconds(), float64(len(acked))/sendTime.Seconds(),
		consumed.Load(), consumed.Load()-distinct, lost, allTime.Seconds(), float64(len(acked))/allTime.Seconds(),
		us(lat), us(cl))
}
