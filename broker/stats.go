package broker

import (
	"sync"
	"sync/atomic"
)

// Stats counts the messages the broker stored for send requests and the
// messages it delivered to consumers, since it opened: RocketMQ's
// StoreStatsService putMessageTimesTotal and getMessageTransferedMsgCount,
// which its runtime info reports as msgPutTotalTodayNow and
// msgGetTotalTodayNow, by broker and, as BrokerStatsManager's
// TOPIC_PUT_NUMS and GROUP_GET_NUMS, by topic and by topic and group.
// Counting on the request paths (not reading queue max offsets or
// committed consumer offsets) keeps a reset offset, a deleted topic or a
// consumer that does not commit from changing what was put or got.
type Stats struct {
	put, got atomic.Int64
	topics   sync.Map // topic → *atomic.Int64 (messages put)
	groups   sync.Map // topic@group → *atomic.Int64 (messages got)
}

// Stats returns the broker's message counters.
func (b *Broker) Stats() *Stats { return &b.stats }

// Put counts n messages stored for a send to topic.
func (s *Stats) Put(topic string, n int) {
	if n <= 0 {
		return
	}
	s.put.Add(int64(n))
	counter(&s.topics, topic).Add(int64(n))
}

// Got counts n messages of topic delivered to group by a pull or a pop
// receive.
func (s *Stats) Got(topic, group string, n int) {
	if n <= 0 {
		return
	}
	s.got.Add(int64(n))
	counter(&s.groups, topic+"@"+group).Add(int64(n))
}

// Totals returns the messages put and got since the broker opened.
func (s *Stats) Totals() (put, got int64) { return s.put.Load(), s.got.Load() }

// TopicPuts returns the messages put by topic.
func (s *Stats) TopicPuts() map[string]int64 { return snapshot(&s.topics) }

// GroupGets returns the messages got by "topic@group".
func (s *Stats) GroupGets() map[string]int64 { return snapshot(&s.groups) }

// Forget drops topic's counters and those of its groups (the topic was
// deleted); the broker totals keep them.
func (s *Stats) Forget(topic string) {
	s.topics.Delete(topic)
	s.groups.Range(func(k, _ any) bool {
		if key := k.(string); len(key) > len(topic) && key[:len(topic)+1] == topic+"@" {
			s.groups.Delete(k)
		}
		return true
	})
}

// counter returns m's counter for key, adding it the first time. The
// fast path is a lock-free Load: a send pays no lock.
func counter(m *sync.Map, key string) *atomic.Int64 {
	if c, ok := m.Load(key); ok {
		return c.(*atomic.Int64)
	}
	c, _ := m.LoadOrStore(key, new(atomic.Int64))
	return c.(*atomic.Int64)
}

func snapshot(m *sync.Map) map[string]int64 {
	out := map[string]int64{}
	m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}
