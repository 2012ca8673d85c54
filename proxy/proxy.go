package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/remoting"
)

// ErrConfig reports a Config the proxy cannot run with.
var ErrConfig = errors.New("proxy: bad config")

// Config configures a Proxy.
type Config struct {
	// Broker is the broker served (required).
	Broker *broker.Broker
	// BrokerName and ClusterName name the broker in routes and in the
	// CLUSTER property of stored messages.
	BrokerName, ClusterName string
	// Logger receives the proxy's logs (slog.Default when nil).
	Logger *slog.Logger
	// ACL, if set, checks every request's signature and permissions
	// against the remoting server's plain_acl.yml accounts.
	ACL *acl.Validator
	// TLSMode and TLS are the remoting server's tlsServerMode and
	// certificate: permissive serves TLS and plaintext on one port,
	// enforcing TLS only.
	TLSMode remoting.TLSMode
	TLS     *tls.Config
	// MaxInFlight bounds the requests handled at once; one over it is
	// answered TOO_MANY_REQUESTS (0: no bound).
	MaxInFlight int
	// FallbackChecker receives the transaction check-backs of producer
	// groups with no 5.x producer online (the remoting server's checker).
	FallbackChecker transaction.Checker
	// Clock is the proxy's clock; nil means the wall clock.
	Clock clockwork.Clock
	// LeaderEndpoint returns the gRPC endpoint ("ip:port") of the
	// replicated broker group's leader, which QueryRoute and
	// QueryAssignment advertise so that clients send and receive there
	// (nil, "" or unparsable: this proxy's own address).
	LeaderEndpoint func() string
}

// Proxy serves MessagingService for one broker.
type Proxy struct {
	rmqpb.UnimplementedMessagingServiceServer

	cfg      Config
	b        *broker.Broker
	log      *slog.Logger
	gs       *grpc.Server
	clients  *clientTable
	inFlight atomic.Int64

	mu       sync.Mutex
	endpoint *rmqpb.Endpoints // the address routes advertise
}

// New returns a proxy for cfg.Broker; it serves nothing until Serve.
// It installs itself as the broker's transaction checker, passing groups
// without a 5.x producer to cfg.FallbackChecker.
func New(cfg Config) (*Proxy, error) {
	if cfg.Broker == nil {
		return nil, fmt.Errorf("%w: no broker", ErrConfig)
	}
	if cfg.TLSMode != remoting.TLSDisabled && cfg.TLS == nil {
		return nil, fmt.Errorf("%w: tlsServerMode %s needs a certificate", ErrConfig, cfg.TLSMode)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.BrokerName == "" {
		cfg.BrokerName = "broker-a"
	}
	p := &Proxy{cfg: cfg, b: cfg.Broker, log: cfg.Logger.With("component", "grpc")}
	p.clients = newClientTable()
	opts := append(ServerOptions(int(p.maxBodySize())),
		grpc.ChainUnaryInterceptor(p.unaryInterceptor),
		grpc.ChainStreamInterceptor(p.streamInterceptor))
	p.gs = grpc.NewServer(opts...)
	rmqpb.RegisterMessagingServiceServer(p.gs, p)
	p.b.SetTransactionChecker(transaction.CheckerFunc(p.checkTransaction))
	return p, nil
}

// streamWorkers is how many goroutines run the requests: a request
// handed to a waiting worker runs on its already grown stack, where one
// on a goroutine of its own starts on a small stack that it grows by
// copying (a fifth of the server's CPU under pipelined sends of one
// message a call). A worker is busy while its request waits for the
// store, so there are as many as a few producers' requests in flight
// (4 × 256 in bench --server); requests beyond the busy workers still get
// a goroutine each.
const streamWorkers = 1024

// ServerOptions are the gRPC transport options the proxy serves with, for
// messages of up to maxBody bytes: exported so that a bound measured
// beside it (bench's gRPC echo server) runs on the same transport.
func ServerOptions(maxBody int) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(maxBody + 1<<20),
		grpc.NumStreamWorkers(streamWorkers),
	}
}

// maxBodySize is the broker's maxMessageSize.
func (p *Proxy) maxBodySize() int32 {
	if n := p.b.Store().Config().MaxMessageSize; n > 0 {
		return int32(n)
	}
	return 4 << 20
}

// Serve accepts gRPC connections on ln until Stop; ln is wrapped for the
// TLS mode. The advertised endpoint is ln's address (127.0.0.1 for an
// unspecified IP).
func (p *Proxy) Serve(ln net.Listener) error {
	p.setEndpoint(ln.Addr())
	if p.cfg.TLS != nil {
		ln = remoting.TLSListener(ln, p.cfg.TLSMode, p.cfg.TLS)
	}
	return p.gs.Serve(ln)
}

// setEndpoint records the address QueryRoute advertises.
func (p *Proxy) setEndpoint(a net.Addr) {
	ap := netip.MustParseAddrPort("127.0.0.1:8081")
	if ta, ok := a.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
		if ap.Addr().IsUnspecified() {
			ap = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port())
		}
	}
	e := endpointsOf(ap)
	p.mu.Lock()
	p.endpoint = e
	p.mu.Unlock()
}

func endpointsOf(ap netip.AddrPort) *rmqpb.Endpoints {
	scheme := rmqpb.AddressScheme_IPv4
	if ap.Addr().Unmap().Is6() {
		scheme = rmqpb.AddressScheme_IPv6
	}
	return &rmqpb.Endpoints{Scheme: scheme, Addresses: []*rmqpb.Address{{Host: ap.Addr().Unmap().String(), Port: int32(ap.Port())}}}
}

// endpoints is the address routes advertise: the group's leader's when
// it is known, else this proxy's.
func (p *Proxy) endpoints() *rmqpb.Endpoints {
	if p.cfg.LeaderEndpoint != nil {
		if ap, err := netip.ParseAddrPort(p.cfg.LeaderEndpoint()); err == nil {
			return endpointsOf(ap)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endpoint
}

// Stop ends the streams (held receives, telemetry) and waits for running
// unary requests until ctx ends, then closes the connections.
func (p *Proxy) Stop(ctx context.Context) {
	p.clients.closeAll()
	done := make(chan struct{})
	go func() {
		p.gs.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		p.gs.Stop()
		<-done
	}
}
