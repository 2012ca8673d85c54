package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TCPTransport is Raft's TCP transport with the replicas' repair service
// on the same port: a connection whose first byte is repairMagic (Raft's
// own start with an RPC type, 0 to 4) asks for CommitLog bytes. Made by
// NewTLSTransport, every connection to the port, and every one the node
// opens to its peers (Raft's, repairs', membership requests'), is mutual
// TLS (tls.go).
type TCPTransport struct {
	*raft.NetworkTransport
	layer *tcpLayer
}

// NewTCPTransport returns the transport listening on bind ("ip:port")
// and known to its peers as advertise (this node's address in the peer
// list: bind itself, or a proxy in front of it). Connections to peers
// leave from bind's IP, so that a proxy or firewall between the nodes can
// tell them apart even on one host (127.0.0.11, 127.0.0.12, ...). An
// empty advertise is the bound address (bind may then have port 0).
//
// The port is not authenticated: whoever reaches it can write to the
// group or join it. Use it only on a network that only the group's
// members reach, or use NewTLSTransport.
func NewTCPTransport(bind, advertise string, logger *slog.Logger) (*TCPTransport, error) {
	return newTransport(bind, advertise, nil, logger)
}

// NewTLSTransport is NewTCPTransport with mutual TLS (tls.go): cfg, from
// LoadPeerTLS, is this node's certificate and the group's CA. A peer
// whose certificate the CA did not sign is refused and logged (Refused
// counts them).
func NewTLSTransport(bind, advertise string, cfg *tls.Config, logger *slog.Logger) (*TCPTransport, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: NewTLSTransport without a TLS config", ErrConfig)
	}
	return newTransport(bind, advertise, cfg, logger)
}

func newTransport(bind, advertise string, tlsCfg *tls.Config, logger *slog.Logger) (*TCPTransport, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft bind: %w", err)
	}
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	adv, err := net.ResolveTCPAddr("tcp", advertise)
	if err == nil && (adv.IP == nil || adv.IP.IsUnspecified()) {
		err = fmt.Errorf("%w: raft address %q is not one peers can dial", ErrConfig, advertise)
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: raft address %q: %v", ErrConfig, advertise, err)
	}
	l := &tcpLayer{ln: ln, adv: adv, tls: tlsCfg, log: logger, conns: make(chan net.Conn), done: make(chan struct{})}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		l.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	l.dial = dialer(l.dialer, tlsCfg)
	go l.acceptLoop()
	hl := hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: raftLogLevel(), Output: slogWriter{logger}, DisableTime: true})
	// MaxRPCsInFlight 1: no pipelined AppendEntries (see noPipeline).
	nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: l, MaxPool: 3,
		Timeout: 10 * time.Second, Logger: hl, MaxRPCsInFlight: 1})
	return &TCPTransport{NetworkTransport: nt, layer: l}, nil
}

// TLS reports whether the transport is mutual TLS.
func (t *TCPTransport) TLS() bool { return t.layer.tls != nil }

// Refused is the number of connections to the port refused because the
// peer did not complete a TLS handshake with a certificate the group's
// CA signed.
func (t *TCPTransport) Refused() int64 { return t.layer.refused.Load() }

// useFor makes n's repair and membership requests dial as Raft does
// (TLS included), unless a test replaced them.
func (t *TCPTransport) useFor(n *Node, cfg NodeConfig) {
	h := n.serveRepair
	t.layer.repair.Store(&h)
	if cfg.askPeer == nil {
		n.ask = t.layer.dial.askPeer
	}
	if cfg.askAdmin == nil {
		n.adminCall = t.layer.dial.admin
	}
}

// repairMagic starts a repair request (see repair.go).
const repairMagic = 0xF0

// tcpLayer is a raft.StreamLayer over TCP that dials from its bind IP and
// hands repair connections to the node.
type tcpLayer struct {
	ln      net.Listener
	adv     net.Addr
	tls     *tls.Config // nil: plain TCP
	log     *slog.Logger
	refused atomic.Int64
	dialer  net.Dialer
	dial    dialFunc // dialer, with TLS when on
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	repair  atomic.Pointer[func(net.Conn, *bufio.Reader)]
}

func (l *tcpLayer) acceptLoop() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			l.once.Do(func() { close(l.done) })
			return
		}
		go l.route(c)
	}
}

// route peeks at the first byte: a repair request or a Raft connection.
// With TLS, the handshake comes first: a peer the group's CA did not
// certify is refused before anything it sends is read.
func (l *tcpLayer) route(c net.Conn) {
	if l.tls != nil {
		tc, err := serverHandshake(c, l.tls)
		if err != nil {
			l.refused.Add(1)
			l.log.Warn("cluster: refused a connection to the Raft port: TLS handshake failed",
				"remote", c.RemoteAddr().String(), "reason", describeRefusal(err))
			_ = c.Close()
			return
		}
		c = tc
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		_ = c.Close()
		return
	}
	if b[0] == repairMagic {
		if h := l.repair.Load(); h != nil {
			(*h)(c, br)
			return
		}
		_ = c.Close()
		return
	}
	select {
	case l.conns <- &peekedConn{Conn: c, r: br}:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *tcpLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tcpLayer) Close() error {
	err := l.ln.Close()
	l.once.Do(func() { close(l.done) })
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (l *tcpLayer) Addr() net.Addr { return l.adv }

func (l *tcpLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.dial(ctx, string(address))
}

// peekedConn replays the bytes route peeked at.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
