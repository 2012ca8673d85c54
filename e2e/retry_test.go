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

func sendN(t testing.TB, p producerAPI, topic string, from, to int, tag string) {
	t.Helper()
	for i := from; i < to; i++ {
		m := primitive.NewMessage(topic, []byte("body-"+strconv.Itoa(i)))
		if tag != "" {
			m.WithTag(tag)
		}
		m.WithProperty("seq", strconv.Itoa(i))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

func TestTagSubscription(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	for i, tag := range []string{"A", "B", "C", "D", "A", "B"} {
		sendN(t, p, "TopicTags", i, i+1, tag)
	}
	col, c := collect(t, consumerOpts(n.Addr, "GroupTags"), "TopicTags",
		consumer.MessageSelector{Type: consumer.TAG, Expression: "A || B"})
	defer c.Shutdown()
	col.waitDistinct(t, 20*time.Second, 4)
	time.Sleep(500 * time.Millisecond)
	col.mu.Lock()
	defer col.mu.Unlock()
	for k, ms := range col.msgs {
		if tag := ms[0].GetTags(); tag != "A" && tag != "B" {
			t.Errorf("message %s has tag %q", k, tag)
		}
	}
	if len(col.msgs) != 4 {
		t.Errorf("got %d messages, want 4", len(col.msgs))
	}
}

func TestRetryLaterRedelivers(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicRetry", 0, 5, "T")
	var mu sync.Mutex
	first := map[string]time.Time{}
	var redelivered []*primitive.MessageExt
	var delays []time.Duration
	done := make(chan struct{})
	c := startConsumer(t, consumerOpts(n.Addr, "GroupRetry"), "TopicRetry", consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			res := consumer.ConsumeSuccess
			for _, m := range msgs {
				seq := m.GetProperty("seq")
				if _, ok := first[seq]; !ok {
					first[seq] = time.Now()
					res = consumer.ConsumeRetryLater
					continue
				}
				redelivered = append(redelivered, m)
				delays = append(delays, time.Since(first[seq]))
				if len(redelivered) == 5 {
					close(done)
				}
			}
			return res, nil
		})
	defer c.Shutdown()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("redelivered %d of 5", len(redelivered))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, m := range redelivered {
		if m.ReconsumeTimes != 1 || m.Topic != "TopicRetry" || m.GetTags() != "T" {
			t.Errorf("redelivery %d: reconsumeTimes %d topic %s tags %q", i, m.ReconsumeTimes, m.Topic, m.GetTags())
		}
		// Level 3 (first retry) is 300 ms here.
		if delays[i] < 250*time.Millisecond {
			t.Errorf("redelivery %d after %v, before the 300 ms delay", i, delays[i])
		}
	}
}

func TestMaxReconsumeGoesToDLQ(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicDLQ", 0, 3, "X")
	var mu sync.Mutex
	attempts := map[string]int{}
	c := startConsumer(t, consumerOpts(n.Addr, "GroupDLQ", consumer.WithMaxReconsumeTimes(2)), "TopicDLQ", consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				attempts[m.GetProperty("seq")]++
			}
			return consumer.ConsumeRetryLater, nil
		})
	defer c.Shutdown()

	dlq := newCollector()
	d := startConsumer(t, consumerOpts(n.Addr, "GroupDLQReader"), "%DLQ%GroupDLQ", consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				dlq.add(m)
			}
			return consumer.ConsumeSuccess, nil
		})
	defer d.Shutdown()
	if !dlq.waitFor(t, 40*time.Second, func() bool { return dlq.distinct() == 3 }) {
		mu.Lock()
		t.Fatalf("DLQ has %d of 3; attempts %v", dlq.distinct(), attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	for seq, k := range attempts {
		if k != 3 { // first delivery + 2 retries
			t.Errorf("message %s consumed %d times, want 3", seq, k)
		}
	}
	dlq.mu.Lock()
	defer dlq.mu.Unlock()
	for seq, ms := range dlq.msgs {
		m := ms[0]
		if string(m.Body) != "body-"+seq || m.GetTags() != "X" || m.GetProperty("RETRY_TOPIC") != "TopicDLQ" {
			t.Errorf("DLQ message %s: body %q tags %q props %v", seq, m.Body, m.GetTags(), m.GetProperties())
		}
	}
}
