package remoting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/internal/faultlog"
)

// Server accepts remoting connections and serves their requests with one
// Handler, usually a *Mux.
type Server struct {
	handler Handler
	opts    Options // with defaults
	stats   counters
	budget  *byteBudget     // bytes of incoming frames, shared by all connections
	ctx     context.Context // parent of every connection's context
	cancel  context.CancelFunc
	nextID  atomic.Uint64
	wg      sync.WaitGroup // accept loops and connections

	// Floods: refused connections and failing accepts are logged once,
	// then at most once a minute with counts, and their end.
	refusals, acceptFaults faultlog.Log

	reapOnce   sync.Once
	reaperDone chan struct{} // closed when the reaper (started with the first listener) exits

	mu struct {
		sync.Mutex
		closed    bool
		listeners map[net.Listener]struct{}
		conns     map[*Conn]struct{}
	}
}

// NewServer returns a server that dispatches requests to h.
func NewServer(h Handler, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{handler: h, opts: opts.withDefaults()}
	s.budget = newByteBudget(s.opts)
	s.reaperDone = make(chan struct{})
	s.refusals = faultlog.Log{Logger: s.opts.Logger, Level: slog.LevelWarn, Clock: s.opts.Clock}
	s.acceptFaults = faultlog.Log{Logger: s.opts.Logger, Level: slog.LevelError, Clock: s.opts.Clock}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = map[net.Listener]struct{}{}
	s.mu.conns = map[*Conn]struct{}{}
	return s, nil
}

// Listen binds a TCP listener on addr (e.g. "127.0.0.1:9876", port 0 for
// any) and serves it in the background; it returns the bound address.
func (s *Server) Listen(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := s.track(ln); err != nil {
		_ = ln.Close()
		return nil, err
	}
	go func() {
		defer s.wg.Done()
		_ = s.acceptLoop(ln)
	}()
	return ln.Addr(), nil
}

// Serve accepts connections on ln until the server closes, then returns
// ErrServerClosed. It closes ln.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.track(ln); err != nil {
		_ = ln.Close()
		return err
	}
	defer s.wg.Done()
	return s.acceptLoop(ln)
}

// track registers ln and counts its accept loop in wg.
func (s *Server) track(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrServerClosed
	}
	s.mu.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.reapOnce.Do(func() { go s.reapLoop() })
	return nil
}

// reapPeriod is how often the reaper looks for stalled frames: a quarter
// of FrameTimeout, at most a second.
func reapPeriod(frameTimeout time.Duration) time.Duration {
	return max(min(frameTimeout/4, time.Second), time.Millisecond)
}

// reapLoop closes, until the server closes, the connections whose peer
// stalled inside a frame for longer than FrameTimeout: such a frame holds
// receive budget, which other peers' frames may be waiting for. (The
// socket's read deadline is IdleTimeout's; a deadline per frame would cost
// a timer update on every frame that does not arrive in one read.)
func (s *Server) reapLoop() {
	defer close(s.reaperDone)
	tick := s.opts.Clock.NewTicker(reapPeriod(s.opts.FrameTimeout))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.Chan():
			now := s.opts.Clock.Now() // not the tick's time, which may be late
			for _, c := range s.Conns() {
				if c.frameOverdue(now, s.opts.FrameTimeout) {
					c.close(fmt.Errorf("%w: the peer sent part of a frame and nothing more for %v",
						ErrFrameTimeout, s.opts.FrameTimeout))
				}
			}
		}
	}
}

// stopReaper ends the reaper (after s.cancel) and waits for it.
func (s *Server) stopReaper() {
	s.reapOnce.Do(func() { close(s.reaperDone) }) // never started
	<-s.reaperDone
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if backoff = nextBackoff(backoff); !isTemporary(err) || !s.sleep(backoff) {
				s.opts.Logger.Error("remoting: accept failed", "addr", ln.Addr().String(), "err", err)
				return err
			}
			// Out of file descriptors under a connection flood: one line
			// a minute, not one per retry.
			s.acceptFaults.Failed("remoting: accept failed; retrying", err, "addr", ln.Addr().String())
			continue
		}
		if backoff != 0 {
			s.acceptFaults.Resumed("remoting: accepting connections again", "addr", ln.Addr().String())
		}
		backoff = 0
		s.startConn(nc)
	}
}

// isTemporary reports accept errors worth retrying after a pause, such as
// running out of file descriptors; a closed listener is not one.
func isTemporary(err error) bool {
	return !errors.Is(err, net.ErrClosed)
}

func nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Millisecond
	}
	return min(2*d, time.Second)
}

// sleep waits d of the server's clock, or less if the server closes; it
// reports whether the server is still open.
func (s *Server) sleep(d time.Duration) bool {
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-s.ctx.Done():
		return false
	}
}

// floodOverBelow is the number of open connections under which a flood
// that reached maxConns is over: a tenth of the limit below it (at least
// one connection), so that a flood holding the server at the limit while
// some of its connections close and others take their places is logged as
// one flood, not as an end and a new start each time a slot frees.
func floodOverBelow(maxConns int) int {
	return max(maxConns-max(maxConns/10, 1), 1)
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		_ = nc.Close()
		return
	}
	if s.opts.MaxConns > 0 && len(s.mu.conns) >= s.opts.MaxConns {
		s.stats.connsRejected.Add(1)
		s.refusals.Failed("remoting: too many connections; refusing new ones", ErrTooManyConns,
			"remote", nc.RemoteAddr().String(), "max", s.opts.MaxConns)
		_ = nc.Close()
		return
	}
	if s.refusals.Failing() && len(s.mu.conns) < floodOverBelow(s.opts.MaxConns) {
		s.refusals.Resumed("remoting: connection flood over; accepting again", "open", len(s.mu.conns), "max", s.opts.MaxConns)
	}
	c := newConn(s.ctx, s.nextID.Add(1), nc, s.handler, s.opts, &s.stats, s.budget)
	s.mu.conns[c] = struct{}{}
	s.stats.connsAccepted.Add(1)
	s.stats.connsOpen.Add(1)
	c.untrack = func() {
		s.mu.Lock()
		delete(s.mu.conns, c)
		s.mu.Unlock()
		s.stats.connsOpen.Add(-1)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.run()
	}()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// Conns returns the open connections, e.g. to notify every client.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		out = append(out, c)
	}
	return out
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	st := s.stats.snapshot()
	st.ReceiveBytesInUse = s.budget.inUse()
	return st
}

// stopAccepting marks the server closed, closes its listeners and returns
// the connections open at that moment; no connection starts afterwards.
func (s *Server) stopAccepting() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.closed {
		s.mu.closed = true
		for ln := range s.mu.listeners {
			_ = ln.Close()
		}
	}
	out := make([]*Conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		out = append(out, c)
	}
	return out
}

// Close stops accepting, closes every connection at once (queued responses
// are dropped, handler contexts canceled) and waits for every goroutine the
// server started, handlers included. It is idempotent.
func (s *Server) Close() error {
	for _, c := range s.stopAccepting() {
		c.close(ErrServerClosed)
	}
	s.cancel()
	s.wg.Wait()
	s.stopReaper()
	return nil
}

// Shutdown stops accepting and reading new requests, lets running handlers
// finish and their responses flush, then closes the connections. If ctx
// ends first it falls back to Close and returns ctx's error. Responses a
// handler deferred (long polling) must be written before Shutdown, or they
// are lost with the connection.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.stopAccepting() {
		c.drain()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		s.stopReaper()
		return nil
	case <-ctx.Done():
		_ = s.Close()
		<-done
		return ctx.Err()
	}
}
