package server

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// maxRateWait is how long a request over its connection's rate may wait
// for a token before it is refused. Waiting, not refusing, is what
// throttles a flood cheaply: the waiting requests fill the connection's
// MaxConcurrentRequests, the server stops reading it, and TCP pushes back
// on the sender, which then costs the server nothing.
const maxRateWait = time.Second

// limiter enforces Limits.ConnRequestRate (a token bucket per connection)
// and Limits.MaxInFlight (a global bound with a fair share per
// connection).
type limiter struct {
	rate, burst float64
	maxInFlight int
	clock       clockwork.Clock

	mu       sync.Mutex
	inFlight int // across connections
	active   int // connections with requests in flight
	conns    map[uint64]*connLimit
}

type connLimit struct {
	tokens   float64
	last     time.Time
	inFlight int
}

func newLimiter(l Limits, clock clockwork.Clock) *limiter {
	burst := float64(l.ConnRequestBurst)
	if burst == 0 {
		burst = max(1, 2*l.ConnRequestRate)
	}
	return &limiter{rate: l.ConnRequestRate, burst: burst, maxInFlight: l.MaxInFlight, clock: clock, conns: map[uint64]*connLimit{}}
}

// admit takes a request of connection id, waiting for a rate token when
// needed. It returns the function that ends it, or nil and the name of the
// limit that refused it.
func (l *limiter) admit(ctx context.Context, id uint64) (release func(), refusedBy string) {
	if l.rate > 0 {
		wait, ok := l.reserve(id)
		if !ok {
			return nil, "connection_rate"
		}
		if wait > 0 {
			t := l.clock.NewTimer(wait)
			select {
			case <-t.Chan():
			case <-ctx.Done():
				t.Stop()
				return nil, "connection_rate"
			}
		}
	}
	return l.enter(id)
}

func (l *limiter) conn(id uint64) *connLimit {
	c := l.conns[id]
	if c == nil {
		c = &connLimit{tokens: l.burst, last: l.clock.Now()}
		l.conns[id] = c
	}
	return c
}

// reserve takes a token from id's bucket, possibly one that arrives only
// after the returned wait; a wait over maxRateWait is refused.
func (l *limiter) reserve(id uint64) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conn(id)
	now := l.clock.Now()
	c.tokens = min(l.burst, c.tokens+now.Sub(c.last).Seconds()*l.rate)
	c.last = now
	wait := time.Duration(max(0, 1-c.tokens) / l.rate * float64(time.Second))
	if wait > maxRateWait {
		return 0, false
	}
	c.tokens--
	return wait, true
}

// enter applies the in-flight bound.
func (l *limiter) enter(id uint64) (release func(), refusedBy string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conn(id)
	if l.maxInFlight > 0 && l.inFlight >= l.maxInFlight {
		if fair := max(1, l.maxInFlight/max(1, l.active)); c.inFlight >= fair {
			return nil, "in_flight"
		}
	}
	c.inFlight++
	l.inFlight++
	if c.inFlight == 1 {
		l.active++
	}
	return func() { l.done(c) }, ""
}

func (l *limiter) done(c *connLimit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.inFlight--
	l.inFlight--
	if c.inFlight == 0 {
		l.active--
	}
}

// forget drops a closed connection's state.
func (l *limiter) forget(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, id)
}
