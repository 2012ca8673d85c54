package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketstore/rocketstore/broker"
)

// A consumer that restarts resumes from the offsets it committed: it gets
// the new messages and none below the offsets the broker holds for it.
// The client commits asynchronously (its offset table is updated after the
// consume callback returns, and Shutdown persists that table), so the
// offsets committed at shutdown may trail what the callback saw; the test
// reads them from the broker instead of assuming all 50.
func TestRestartedConsumerResumes(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicResume", 0, 50, "")
	col1, c1 := collect(t, consumerOpts(n.Addr, "GroupResume"), "TopicResume", consumer.MessageSelector{})
	col1.waitDistinct(t, 20*time.Second, 50)
	// Shutdown persists the offsets (one-way UPDATE_CONSUMER_OFFSET).
	_ = c1.Shutdown()
	tc, ok := n.Broker.Topics().Get("TopicResume")
	if !ok {
		t.Fatal("TopicResume does not exist")
	}
	committed := map[int32]int64{}
	var total int64
	deadline := time.Now().Add(10 * time.Second) // the update is one-way: it may still be on its way
	for total == 0 && time.Now().Before(deadline) {
		total = 0
		for q := int32(0); q < int32(tc.ReadQueueNums); q++ {
			if code, off := n.Broker.QueryConsumerOffset("GroupResume", "TopicResume", q); code == broker.Success && off > 0 {
				committed[q] = off
				total += off
			}
		}
		if total == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if total == 0 {
		t.Fatal("the consumer's shutdown committed no offset to the broker")
	}
	t.Logf("committed at shutdown: %v (%d of 50 messages)", committed, total)
	sendN(t, p, "TopicResume", 50, 80, "")
	col2, c2 := collect(t, consumerOpts(n.Addr, "GroupResume"), "TopicResume", consumer.MessageSelector{})
	defer c2.Shutdown()
	if !col2.waitFor(t, 20*time.Second, func() bool {
		col2.mu.Lock()
		defer col2.mu.Unlock()
		for i := 50; i < 80; i++ {
			if len(col2.msgs[strconv.Itoa(i)]) == 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("second consumer got %d messages, not all 30 new ones", col2.distinct())
	}
	time.Sleep(time.Second) // let any redelivery below the committed offsets arrive
	col2.mu.Lock()
	defer col2.mu.Unlock()
	for k, ms := range col2.msgs {
		for _, m := range ms {
			if q := int32(m.Queue.QueueId); m.QueueOffset < committed[q] {
				t.Errorf("message %s (queue %d offset %d) redelivered below the committed offset %d", k, q, m.QueueOffset, committed[q])
			}
		}
	}
}

// The server restarts while a producer sends and a consumer consumes:
// every message whose send was acknowledged is consumed.
func TestServerRestartLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := node(t, dir, "127.0.0.1:0")
	addr := n.Addr
	p := newProducer(t, addr)
	sendN(t, p, "TopicRestart", -1, 0, "")
	col, c := collect(t, consumerOpts(addr, "GroupRestart"), "TopicRestart", consumer.MessageSelector{})
	defer c.Shutdown()
	// The topic must exist before the consumer starts.
	_ = c
	var mu sync.Mutex
	acked := map[string]bool{}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			m := primitive.NewMessage("TopicRestart", []byte("x"))
			m.WithProperty("seq", strconv.Itoa(i))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := p.SendSync(ctx, m)
			cancel()
			if err == nil {
				mu.Lock()
				acked[strconv.Itoa(i)] = true
				mu.Unlock()
			}
		}
	}
	start := time.Now()
	send(0, 100)
	t.Logf("sent 100 in %v", time.Since(start))
	stopNode(t, n)
	start = time.Now()
	send(100, 101) // the server is down: this one fails
	t.Logf("send while down took %v", time.Since(start))
	n = node(t, dir, addr)
	defer stopNode(t, n)
	start = time.Now()
	send(101, 200)
	t.Logf("sent 99 after restart in %v", time.Since(start))
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	if want < 195-5 {
		t.Fatalf("only %d sends acknowledged", want)
	}
	if missing := col.waitForKeys(t, 60*time.Second, acked); len(missing) > 0 {
		t.Fatalf("%d acknowledged messages never consumed: %v", len(missing), missing)
	}
}
