package longpoll

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/internal/clocks"
)

// ErrClosed reports a wait on a closed Hold.
var ErrClosed = errors.New("longpoll: closed")

// Matcher decides whether an arriving message can match a held request
// (filter.TagFilter implements it).
type Matcher interface {
	IsMatchedByConsumeQueue(tagsCode int64) bool
}

// Outcome says why Wait returned without error.
type Outcome int

const (
	// Arrived: a matching message arrived (or was already there).
	Arrived Outcome = iota
	// TimedOut: the suspend timeout passed.
	TimedOut
)

// String names the outcome.
func (o Outcome) String() string {
	if o == Arrived {
		return "arrived"
	}
	return "timed out"
}

// waiter is one held request.
type waiter struct {
	pullFrom int64
	filter   Matcher
	wake     chan struct{} // closed once, by whoever removes the waiter
}

// queueWaiters is RocketMQ's ManyPullRequest.
type queueWaiters map[*waiter]struct{}

// Hold is the table of held requests.
type Hold struct {
	// notify is false in short-polling mode: arrivals do not wake
	// requests, which wait for their (short) timeout.
	notify bool
	// clock times the suspend timeouts; tests hand in a fake one.
	clock clockwork.Clock
	held  atomic.Int64 // number of held requests; lets Dispatch skip the lock

	mu struct {
		sync.Mutex
		table  map[string]map[int32]queueWaiters
		closed bool
		// added is closed and replaced each time a request is held, so
		// that WaitHeld needs no polling.
		added chan struct{}
	}
	done chan struct{}
}

// New returns a Hold whose suspend timeouts run on clock (nil means the
// wall clock; a broker hands in its store's clock, tests a
// clockwork.FakeClock, so that a timeout passes exactly when the test
// advances the clock). With notifyOnArrival false (short polling)
// arrivals do not wake held requests.
func New(notifyOnArrival bool, clock clockwork.Clock) *Hold {
	h := &Hold{notify: notifyOnArrival, clock: clocks.Or(clock), done: make(chan struct{})}
	h.mu.table = make(map[string]map[int32]queueWaiters)
	h.mu.added = make(chan struct{})
	return h
}

// Held returns the number of requests held now.
func (h *Hold) Held() int { return int(h.held.Load()) }

// WaitHeld blocks until at least n requests are held, ctx is done (its
// error is returned) or the Hold closes (ErrClosed). Tests and tools use it
// to act once a pull is suspended, without polling.
func (h *Hold) WaitHeld(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		added, closed := h.mu.added, h.mu.closed
		h.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if h.Held() >= n {
			return nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return ctx.Err()
		case <-h.done:
			return ErrClosed
		}
	}
}

// Wait holds a request for topic/queueID that pulls from pullFrom until
// a message matching filter arrives, timeout passes, ctx is done (its
// error is returned) or the Hold closes (ErrClosed). maxOffset reads the
// queue's current max offset for the re-check after registration.
func (h *Hold) Wait(ctx context.Context, topic string, queueID int32, pullFrom int64, filter Matcher,
	timeout time.Duration, maxOffset func() int64) (Outcome, error) {
	w := &waiter{pullFrom: pullFrom, filter: filter, wake: make(chan struct{})}
	if err := h.add(topic, queueID, w); err != nil {
		return 0, err
	}
	// The re-check that closes the race with an arrival dispatched before
	// add: like checkHoldRequest, any new unit wakes the request.
	if maxOffset() > pullFrom {
		h.remove(topic, queueID, w)
		return Arrived, nil
	}
	t := h.clock.NewTimer(max(0, timeout))
	defer t.Stop()
	select {
	case <-w.wake:
		return Arrived, nil
	case <-t.Chan():
		h.remove(topic, queueID, w)
		return TimedOut, nil
	case <-ctx.Done():
		h.remove(topic, queueID, w)
		return 0, ctx.Err()
	case <-h.done:
		return 0, ErrClosed
	}
}

func (h *Hold) add(topic string, queueID int32, w *waiter) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return ErrClosed
	}
	qs := h.mu.table[topic]
	if qs == nil {
		qs = make(map[int32]queueWaiters)
		h.mu.table[topic] = qs
	}
	ws := qs[queueID]
	if ws == nil {
		ws = make(queueWaiters)
		qs[queueID] = ws
	}
	ws[w] = struct{}{}
	h.held.Add(1)
	close(h.mu.added)
	h.mu.added = make(chan struct{})
	return nil
}

// remove drops w if it is still held.
func (h *Hold) remove(topic string, queueID int32, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.mu.table[topic][queueID]
	if _, ok := ws[w]; ok {
		h.dropLocked(topic, queueID, ws, w)
	}
}

func (h *Hold) dropLocked(topic string, queueID int32, ws queueWaiters, w *waiter) {
	delete(ws, w)
	h.held.Add(-1)
	if len(ws) == 0 {
		delete(h.mu.table[topic], queueID)
		if len(h.mu.table[topic]) == 0 {
			delete(h.mu.table, topic)
		}
	}
}

// NotifyMessageArriving wakes the requests of topic/queueID whose pull
// offset is below maxOffset and whose filter matches tagsCode (RocketMQ's
// notifyMessageArriving). It never blocks and does not allocate.
func (h *Hold) NotifyMessageArriving(topic []byte, queueID int32, maxOffset, tagsCode int64) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.mu.table[string(topic)][queueID]
	for w := range ws {
		if maxOffset > w.pullFrom && (w.filter == nil || w.filter.IsMatchedByConsumeQueue(tagsCode)) {
			close(w.wake)
			h.dropLocked(string(topic), queueID, ws, w)
		}
	}
}

// Dispatch is the arrival hook: it notifies the requests held on the
// record's queue. Pass the Hold to engine.Open as a dispatcher.
func (h *Hold) Dispatch(req *dispatch.Request) error {
	if h.notify && req.Dispatchable() {
		h.NotifyMessageArriving(req.Topic, req.QueueID, req.ConsumeQueueOffset+1, req.TagsCode)
	}
	return nil
}

// Close releases every held request with ErrClosed. It is idempotent.
func (h *Hold) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return
	}
	h.mu.closed = true
	close(h.done)
}

var _ dispatch.Dispatcher = (*Hold)(nil)
