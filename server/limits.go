package server

import (
	"sync"
	"time"
)

// limiter enforces Limits.ConnRequestRate (a token bucket per connection)
// and Limits.MaxInFlight (a global bound with a fair share per
// connection).
type limiter struct {
	rate, burst float64
	maxInFlight int
	now         func() time.Time

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

func newLimiter(l Limits, now func() time.Time) *limiter {
	burst := float64(l.ConnRequestBurst)
	if burst == 0 {
		burst = max(1, 2*l.ConnRequestRate)
	}
	return &limiter{rate: l.ConnRequestRate, burst: burst, maxInFlight: l.MaxInFlight, now: now, conns: map[uint64]*connLimit{}}
}

// admit takes a request of connection id. It returns the function that
// ends it, or nil and the name of the limit that refused it.
func (l *limiter) admit(id uint64) (release func(), refusedBy string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[id]
	if c == nil {
		c = &connLimit{tokens: l.burst, last: l.now()}
		l.conns[id] = c
	}
	if l.rate > 0 {
		now := l.now()
		c.tokens = min(l.burst, c.tokens+now.Sub(c.last).Seconds()*l.rate)
		c.last = now
		if c.tokens < 1 {
			return nil, "connection_rate"
		}
		c.tokens--
	}
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
