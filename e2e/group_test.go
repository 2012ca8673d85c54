package e2e

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// queueTracker records which queues each consumer received from.
type queueTracker struct {
	mu     sync.Mutex
	queues map[int]map[int]bool // consumer → queue ids
	col    *collector
}

func (q *queueTracker) fn(id int) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		q.mu.Lock()
		for _, m := range msgs {
			if q.queues[id] == nil {
				q.queues[id] = map[int]bool{}
			}
			q.queues[id][m.Queue.QueueId] = true
		}
		q.mu.Unlock()
		for _, m := range msgs {
			q.col.add(m)
		}
		return consumer.ConsumeSuccess, nil
	}
}

// Two consumers of one group split the topic's queues: the second one's
// arrival is notified (NOTIFY_CONSUMER_IDS_CHANGED) and both rebalance.
func TestTwoConsumersSplitQueues(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicSplit", 0, 1, "") // creates the topic with 4 queues
	qt := &queueTracker{queues: map[int]map[int]bool{}, col: newCollector()}
	c1 := startConsumer(t, consumerOpts(n.Addr, "GroupSplit"), "TopicSplit", consumer.MessageSelector{}, qt.fn(1))
	defer c1.Shutdown()
	c2 := startConsumer(t, consumerOpts(n.Addr, "GroupSplit"), "TopicSplit", consumer.MessageSelector{}, qt.fn(2))
	defer c2.Shutdown()
	// Wait until both have rebalanced: the broker lists both.
	deadline := time.Now().Add(10 * time.Second)
	for len(n.Server.ConsumerIDs("GroupSplit")) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // the notified rebalance
	sendN(t, p, "TopicSplit", 1, 401, "")
	if !qt.col.waitFor(t, 30*time.Second, func() bool { return qt.col.distinct() == 401 }) {
		t.Fatalf("consumed %d of 401", qt.col.distinct())
	}
	qt.mu.Lock()
	defer qt.mu.Unlock()
	if len(qt.queues[1]) == 0 || len(qt.queues[2]) == 0 {
		t.Fatalf("queues by consumer: %v", qt.queues)
	}
	for q := range qt.queues[1] {
		if qt.queues[2][q] {
			t.Errorf("queue %d consumed by both consumers: %v", q, qt.queues)
		}
	}
	if d := qt.col.dups(); len(d) > 0 {
		t.Errorf("duplicates: %v", d)
	}
}

// An orderly consumer receives each queue's messages in send order.
func TestOrderlyConsumer(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	const keys, per = 8, 40
	send := func() {
		for i := range per {
			for k := range keys {
				m := primitive.NewMessage("TopicOrder", []byte("x"))
				m.WithShardingKey("key" + strconv.Itoa(k))
				m.WithProperty("seq", strconv.Itoa(k*per+i))
				m.WithProperty("key", strconv.Itoa(k))
				m.WithProperty("i", strconv.Itoa(i))
				if _, err := p.SendSync(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	send()
	var mu sync.Mutex
	got := map[string][]int{} // key → i in consumption order
	col := newCollector()
	c := startConsumer(t, consumerOpts(n.Addr, "GroupOrder", consumer.WithConsumerOrder(true)), "TopicOrder", consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			for _, m := range msgs {
				i, _ := strconv.Atoi(m.GetProperty("i"))
				got[m.GetProperty("key")] = append(got[m.GetProperty("key")], i)
			}
			mu.Unlock()
			for _, m := range msgs {
				col.add(m)
			}
			return consumer.ConsumeSuccess, nil
		})
	defer c.Shutdown()
	col.waitDistinct(t, 40*time.Second, keys*per)
	mu.Lock()
	defer mu.Unlock()
	for k, is := range got {
		if !slices.IsSorted(is) {
			t.Errorf("key %s consumed out of order: %v", k, is)
		}
	}
	if len(n.Server.LockedQueues("GroupOrder")) == 0 {
		t.Errorf("the orderly consumer holds no queue lock")
	}
}

func TestAdminCreateDeleteTopic(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{n.Addr})))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	err = a.CreateTopic(ctx, admin.WithTopicCreate("TopicAdmin"), admin.WithBrokerAddrCreate(n.BrokerAddr),
		admin.WithReadQueueNums(6), admin.WithWriteQueueNums(6))
	if err != nil {
		t.Fatal(err)
	}
	list, err := a.FetchAllTopicList(ctx)
	if err != nil || !slices.Contains(list.TopicList, "TopicAdmin") {
		t.Fatalf("topic list %v, %v", list, err)
	}
	mqs, err := a.FetchPublishMessageQueues(ctx, "TopicAdmin")
	if err != nil || len(mqs) != 6 {
		t.Fatalf("publish queues %v, %v", mqs, err)
	}
	clusters, err := a.FetchClusterList("TopicAdmin")
	if err != nil || !slices.Equal(clusters, []string{"DefaultCluster"}) {
		t.Fatalf("clusters %v, %v", clusters, err)
	}
	// A producer can send to it at once.
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicAdmin", 0, 1, "")
	if err := a.DeleteTopic(ctx, admin.WithTopicDelete("TopicAdmin")); err != nil {
		t.Fatal(err)
	}
	list, err = a.FetchAllTopicList(ctx)
	if err != nil || slices.Contains(list.TopicList, "TopicAdmin") {
		t.Fatalf("topic list after delete %v, %v", list, err)
	}
	if _, ok := n.Broker.Topics().Get("TopicAdmin"); ok {
		t.Fatal("topic still in the broker's table")
	}
}
