package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/internal/faultlog"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/adminapi"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// Server is the name-server and broker roles over one broker.Broker.
type Server struct {
	b   *broker.Broker
	cfg Config
	log *slog.Logger
	// heartbeatFaults: heartbeats refused because config could not be saved.
	heartbeatFaults faultlog.Log
	mux             *remoting.Mux
	rs              *remoting.Server
	clients         *registry
	// producers are the producer clients (request-reply, transaction
	// check-back).
	producers *producerRegistry
	locks     *lockManager
	metrics   Metrics
	sec       *security // nil without Config.Security
	// inlineSends: sends are answered on the read goroutine (inline.go).
	inlineSends bool

	brokerAddr atomic.Pointer[string]
	brokerID   atomic.Int64
	routes     *namesrv.RouteTable // name-server role: registered brokers
	ns         *namesrv.Handlers   // name-server role: its request codes
	reg        *registrar          // broker role with NamesrvAddr: registration

	// admin answers the broker's admin codes; clientTable keeps the
	// consumer details they report (admin_clients.go).
	admin       *adminapi.API
	clientTable *clientTable
	storeDir    string

	// Held pulls. Invariant: once closing is set under pullMu no pull is
	// added to pullWG, so Shutdown can wait for the held ones.
	pullMu     sync.Mutex
	closing    bool
	heldByConn map[uint64]int // connection id → pulls held for it
	pullWG     sync.WaitGroup
	pullCtx    context.Context
	pullCancel context.CancelFunc

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a server for b; it serves nothing until Listen or Serve.
// The caller keeps ownership of b and closes it after Shutdown or Close.
// b may be nil only for Config.Role RoleNameServer.
func New(b *broker.Broker, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Role.hasBroker() && b == nil {
		return nil, fmt.Errorf("%w: role %s needs a broker", ErrConfig, cfg.Role)
	}
	cfg = cfg.withDefaults()
	s := &Server{b: b, cfg: cfg, log: cfg.Logger, mux: remoting.NewMux(), metrics: cfg.Metrics,
		heartbeatFaults: faultlog.Log{Logger: cfg.Logger, Level: slog.LevelError, Clock: cfg.Clock},
		locks:           newLockManager(cfg.LockExpiry, cfg.Clock), stop: make(chan struct{}), done: make(chan struct{})}
	s.clients = newRegistry(s)
	s.producers = newProducerRegistry()
	s.pullCtx, s.pullCancel = context.WithCancel(context.Background())
	s.heldByConn = make(map[uint64]int)
	if cfg.BrokerAddr != "" {
		a := cfg.BrokerAddr
		s.brokerAddr.Store(&a)
	}
	sec, err := newSecurity(s, cfg.Security)
	if err != nil {
		return nil, err
	}
	s.sec = sec
	s.initRoles()
	s.initAdmin()
	s.register()
	if b != nil { // nil in the name-server-only role
		b.SetTransactionChecker(transaction.CheckerFunc(s.checkTransactionState))
	}
	s.registerACLAdmin()
	opts := cfg.Remoting
	s.inlineSends = s.canInlineSends()
	if opts.Inline == nil {
		opts.Inline = s.inlineRequest
	}
	if opts.Ordered == nil && b != nil {
		opts.Ordered = s.orderedRequest
	}
	userClose := opts.OnClose
	opts.OnClose = func(c *remoting.Conn, reason error) {
		s.clients.connClosed(c)
		s.sec.connClosed(c)
		s.brokerConnClosed(c)
		s.adminConnClosed(c)
		s.producers.connClosed(c)
		if userClose != nil {
			userClose(c, reason)
		}
	}
	rs, err := remoting.NewServer(s.handler(), opts)
	if err != nil {
		s.sec.close()
		return nil, err
	}
	s.rs = rs
	if s.metrics != nil && b != nil {
		s.attachMetrics()
	}
	s.startAdmin()
	go s.housekeeping()
	s.startRegistrar()
	return s, nil
}

// handler wraps the mux with the security checks, metrics and the WARN
// log of refused header fields.
func (s *Server) handler() remoting.Handler {
	h := s.secure(s.mux)
	return remoting.HandlerFunc(func(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if s.metrics != nil {
			s.metrics.Request(req.Code)
		}
		resp, err := h.Handle(ctx, c, req)
		if resp != nil && resp.Code == remoting.CodeSystemError {
			s.warnHeaderRefused(c, req, resp)
		}
		return resp, err
	})
}

// Listen binds addr and serves it in the background. The first listener's
// address becomes the advertised broker address unless Config.BrokerAddr
// set one.
func (s *Server) Listen(addr string) (net.Addr, error) {
	if s.sec != nil && s.sec.tls != nil {
		return s.listenTLS(addr)
	}
	a, err := s.rs.Listen(addr)
	if err != nil {
		return nil, err
	}
	s.advertise(a)
	return a, nil
}

// Serve serves ln until the server closes (see Listen for the address).
func (s *Server) Serve(ln net.Listener) error {
	s.advertise(ln.Addr())
	return s.rs.Serve(s.sec.listener(ln))
}

func (s *Server) advertise(a net.Addr) {
	str := a.String()
	s.brokerAddr.CompareAndSwap(nil, &str)
}

// BrokerAddr returns the address routes advertise.
func (s *Server) BrokerAddr() string {
	if p := s.brokerAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// RemotingStats returns the transport's connection and frame counters.
func (s *Server) RemotingStats() remoting.Stats { return s.rs.Stats() }

// Shutdown answers every held pull, stops accepting connections and
// reading requests, lets the running requests answer, and closes the
// connections. If ctx ends first the connections are closed at once and
// ctx's error returned. The broker stays open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopRegistrar(ctx, true)
	s.stopPulls()
	err := s.rs.Shutdown(ctx)
	s.stopHousekeeping()
	s.sec.close()
	return err
}

// Close closes every connection at once, dropping held pulls, and waits
// for the server's goroutines. The broker stays open.
func (s *Server) Close() error {
	s.stopRegistrar(context.Background(), false)
	s.stopPulls()
	err := s.rs.Close()
	s.stopHousekeeping()
	s.sec.close()
	return err
}

// stopPulls releases the held pulls, which answer SYSTEM_BUSY, and
// waits until their answers are queued.
func (s *Server) stopPulls() {
	s.pullMu.Lock()
	s.closing = true
	s.pullMu.Unlock()
	s.pullCancel()
	s.pullWG.Wait()
}

func (s *Server) stopHousekeeping() {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	s.stopAdmin()
}

// housekeeping expires silent clients and stale locks
// (ClientHousekeepingService).
func (s *Server) housekeeping() {
	defer close(s.done)
	t := s.cfg.Clock.NewTicker(s.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.Chan():
			s.scan()
		}
	}
}

// scan expires what is silent at the clock's now: clients, producers,
// locks and registered brokers.
func (s *Server) scan() {
	s.clients.expire()
	s.producers.expire(s.cfg.Clock.Now().Add(-s.cfg.ChannelExpiry))
	s.locks.expire()
	s.expireBrokers()
}

// errShuttingDown is the remark of pulls answered by Shutdown.
var errShuttingDown = errors.New("server: shutting down")

// Config returns the server's configuration, with defaults applied.
func (s *Server) Config() Config { return s.cfg }
