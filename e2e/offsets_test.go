package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func collectInto(col *collector) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			col.add(m)
		}
		return consumer.ConsumeSuccess, nil
	}
}

// A consumer that restarts resumes from the offsets it committed: it gets
// the new messages and none of the acknowledged ones.
func TestRestartedConsumerResumes(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicResume", 0, 50, "")
	col1 := newCollector()
	c1 := startConsumer(t, consumerOpts(n.Addr, "GroupResume"), "TopicResume", consumer.MessageSelector{}, collectInto(col1))
	if !col1.waitFor(t, 20*time.Second, func() bool { return col1.distinct() == 50 }) {
		t.Fatalf("first consumer got %d of 50", col1.distinct())
	}
	// Shutdown persists the offsets (one-way UPDATE_CONSUMER_OFFSET).
	_ = c1.Shutdown()
	sendN(t, p, "TopicResume", 50, 80, "")
	col2 := newCollector()
	c2 := startConsumer(t, consumerOpts(n.Addr, "GroupResume"), "TopicResume", consumer.MessageSelector{}, collectInto(col2))
	defer c2.Shutdown()
	if !col2.waitFor(t, 20*time.Second, func() bool { return col2.distinct() >= 30 }) {
		t.Fatalf("second consumer got %d of 30", col2.distinct())
	}
	time.Sleep(time.Second)
	col2.mu.Lock()
	defer col2.mu.Unlock()
	for k := range col2.msgs {
		if i, _ := strconv.Atoi(k); i < 50 {
			t.Errorf("acknowledged message %d redelivered after the consumer restarted", i)
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
	col := newCollector()
	sendN(t, p, "TopicRestart", -1, 0, "")
	c := startConsumer(t, consumerOpts(addr, "GroupRestart"), "TopicRestart", consumer.MessageSelector{}, collectInto(col))
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
	ok := col.waitFor(t, 60*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		for k := range acked {
			if len(col.msgs[k]) == 0 {
				return false
			}
		}
		return true
	})
	if !ok {
		col.mu.Lock()
		var missing []string
		for k := range acked {
			if len(col.msgs[k]) == 0 {
				missing = append(missing, k)
			}
		}
		col.mu.Unlock()
		t.Fatalf("%d acknowledged messages never consumed: %v", len(missing), missing)
	}
}
