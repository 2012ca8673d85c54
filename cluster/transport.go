package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// NewTCPTransport returns Raft's TCP transport listening on bind
// ("ip:port") and known to its peers as advertise (this node's address in
// the peer list: bind itself, or a proxy in front of it). Connections to
// peers leave from bind's IP, so that a proxy or firewall between the
// nodes can tell them apart even on one host (127.0.0.11, 127.0.0.12,
// ...). An empty advertise is the bound address (bind may then have port
// 0).
func NewTCPTransport(bind, advertise string, logger *slog.Logger) (*raft.NetworkTransport, error) {
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
	l := &tcpLayer{Listener: ln, adv: adv}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		l.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	hl := hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: raftLogLevel(), Output: slogWriter{logger}, DisableTime: true})
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: l, MaxPool: 3,
		Timeout: 10 * time.Second, Logger: hl}), nil
}

// tcpLayer is a raft.StreamLayer over TCP that dials from its bind IP.
type tcpLayer struct {
	net.Listener
	adv    net.Addr
	dialer net.Dialer
}

func (l *tcpLayer) Addr() net.Addr { return l.adv }

func (l *tcpLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := l.dialer
	d.Timeout = timeout
	return d.Dial("tcp", string(address))
}
