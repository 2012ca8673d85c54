package console

import (
	"context"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/admin"
)

// historyLen is how many samples the console keeps: two minutes at one a
// second, enough for the cluster page's charts.
const historyLen = 120

// samplePeriod is the time between two samples.
const samplePeriod = time.Second

// History is the answer of /api/stats: the cluster's message totals, one
// sample a second for the last two minutes, oldest first, so that the
// cluster page draws its charts as soon as it loads.
type History struct {
	Samples []Stats `json:"samples"`
}

// history samples the cluster's totals in the background. One sampler
// runs per console: started by New without ACL, else by the first
// /api/stats request, with that user's client; stopped by Close.
type history struct {
	mu      sync.Mutex
	samples []Stats
	stop    chan struct{} // nil until the sampler starts
	done    chan struct{}
	closed  bool
}

// start starts the sampler with cl unless it runs (or the console closed).
func (c *Console) startHistory(cl *admin.Client) {
	h := &c.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil || h.closed {
		return
	}
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go c.sampleLoop(cl, h.stop, h.done)
}

func (c *Console) sampleLoop(cl *admin.Client, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// One sample a period of the console's clock, at fixed times as a
	// ticker's (a late sample does not delay the next ones; missed ones
	// are skipped). A timer rather than a ticker: while the sampler
	// waits, its timer is the clock's only waiter of it, so that a test
	// on a fake clock knows when a sample is stored.
	clock := c.cfg.Clock
	next := clock.Now()
	for {
		c.sample(cl)
		next = next.Add(samplePeriod)
		if late := clock.Since(next); late >= 0 {
			next = next.Add((late/samplePeriod + 1) * samplePeriod)
		}
		t := clock.NewTimer(clock.Until(next))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.Chan():
		}
	}
}

// sample adds one sample; a failed one is left out (the page shows the
// cluster's errors).
func (c *Console) sample(cl *admin.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	s, err := c.totals(ctx, cl)
	if err != nil {
		c.log.Debug("console: stats sample", "err", err)
		return
	}
	h := &c.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) == historyLen {
		copy(h.samples, h.samples[1:])
		h.samples = h.samples[:historyLen-1]
	}
	h.samples = append(h.samples, s)
}

// snapshot returns the samples, oldest first.
func (h *history) snapshot() []Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Stats(nil), h.samples...)
}

// close stops the sampler and waits for it.
func (h *history) close() {
	h.mu.Lock()
	h.closed = true
	stop, done := h.stop, h.done
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
