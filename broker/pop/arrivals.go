package pop

import (
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/dispatch"
)

// Arrivals tells waiting receives that messages arrived on a topic. It
// is a dispatch.Dispatcher: the broker passes it to the store, after the
// ConsumeQueue builder, so that a woken receive finds the new message.
type Arrivals struct {
	waiting atomic.Int64 // receives waiting; lets Dispatch skip the lock
	mu      sync.Mutex
	topics  map[string]chan struct{}
}

// NewArrivals returns an Arrivals with no one waiting.
func NewArrivals() *Arrivals { return &Arrivals{topics: make(map[string]chan struct{})} }

// Dispatch wakes the receives waiting on the record's topic.
func (a *Arrivals) Dispatch(req *dispatch.Request) error {
	a.wake(req.Topic)
	return nil
}

// wake wakes the receives waiting on topic: a message arrived, or one in
// flight became visible sooner than they were told.
func (a *Arrivals) wake(topic []byte) {
	if a.waiting.Load() == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.topics[string(topic)]; ok {
		close(ch)
		delete(a.topics, string(topic))
	}
}

// watch returns a channel closed at the next arrival on topic; the
// caller calls done when it stops waiting.
func (a *Arrivals) watch(topic string) (ch <-chan struct{}, done func()) {
	a.waiting.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.topics[topic]
	if !ok {
		c = make(chan struct{})
		a.topics[topic] = c
	}
	return c, func() { a.waiting.Add(-1) }
}
