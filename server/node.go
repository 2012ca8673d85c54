package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
)

// NodeConfig configures a Node: a store directory, a broker on it and a
// server in front, which is what `rocketstore serve` runs.
type NodeConfig struct {
	// Dir is the store directory (created if missing).
	Dir string
	// Listen is the name-server address ("127.0.0.1:9876"); the broker
	// role answers on it too.
	Listen string
	// BrokerListen, if set, is a second address for the broker role;
	// routes then advertise it instead of Listen.
	BrokerListen string
	// Broker configures the broker. Its Store.StoreHost is set to the
	// advertised broker address, so that offset message ids point at
	// this server.
	Broker broker.Config
	// Server configures the server. An empty BrokerAddr advertises the
	// broker listener's address, with 127.0.0.1 for an unspecified IP.
	Server Config
}

// Node is a running broker and server.
type Node struct {
	Broker *broker.Broker
	Server *Server
	// Addr is the name-server address clients are given; BrokerAddr the
	// address routes advertise.
	Addr, BrokerAddr string

	wg      sync.WaitGroup
	closeMu sync.Mutex
	closed  bool
}

// StartNode opens the store in cfg.Dir and serves it. With
// cfg.Server.Role RoleNameServer it opens no store (Node.Broker is nil)
// and serves the name server on Listen only.
func StartNode(cfg NodeConfig) (*Node, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9876"
	}
	if cfg.Server.Role == RoleNameServer {
		return startNameServer(cfg)
	}
	if cfg.Server.Role == RoleBroker && cfg.BrokerListen != "" {
		// No name server to listen for: the broker address is the only one.
		cfg.Listen, cfg.BrokerListen = cfg.BrokerListen, ""
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	lns := []net.Listener{ln}
	closeAll := func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}
	brokerLn := ln
	if cfg.BrokerListen != "" {
		if brokerLn, err = net.Listen("tcp", cfg.BrokerListen); err != nil {
			closeAll()
			return nil, err
		}
		lns = append(lns, brokerLn)
	}
	adv := cfg.Server.BrokerAddr
	if adv == "" {
		adv = AdvertisedAddr(brokerLn.Addr())
	}
	ap, err := netip.ParseAddrPort(adv)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: broker address %q must be an IP literal and port: %w", ErrConfig, adv, err)
	}
	cfg.Server.BrokerAddr = adv
	if sc := &cfg.Server.Security; sc.ACLEnable && sc.ACLFile == "" {
		sc.ACLFile = filepath.Join(cfg.Dir, "config", DefaultACLFile)
	}
	cfg.Broker.Store.StoreHost = ap
	fsys, err := mmap.New(cfg.Dir)
	if err != nil {
		closeAll()
		return nil, err
	}
	b, err := broker.Open(fsys, cfg.Broker)
	if err != nil {
		closeAll()
		return nil, err
	}
	s, err := New(b, cfg.Server)
	if err != nil {
		closeAll()
		return nil, errors.Join(err, b.Close())
	}
	s.storeDir = cfg.Dir
	n := &Node{Broker: b, Server: s, Addr: AdvertisedAddr(ln.Addr()), BrokerAddr: adv}
	for _, l := range lns {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = s.Serve(l)
		}()
	}
	return n, nil
}

// AdvertisedAddr turns a listener address into one clients can dial: an
// unspecified IP (0.0.0.0, ::) becomes 127.0.0.1. Nodes advertise their
// addresses (Node.Addr, Node.BrokerAddr) with it.
func AdvertisedAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	return netip.AddrPortFrom(ip, ta.AddrPort().Port()).String()
}

// Shutdown stops the server gracefully (held pulls answered, running
// requests finished), then closes the broker, which persists offsets and
// flushes the store. It is idempotent.
func (n *Node) Shutdown(ctx context.Context) error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	err := n.Server.Shutdown(ctx)
	n.wg.Wait()
	return errors.Join(err, n.closeBroker())
}

// Close closes the connections at once, then the broker.
func (n *Node) Close() error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	err := n.Server.Close()
	n.wg.Wait()
	return errors.Join(err, n.closeBroker())
}

func (n *Node) closeBroker() error {
	if n.Broker == nil {
		return nil
	}
	return n.Broker.Close()
}

// startNameServer starts a name-server-only node: no store, one listener.
func startNameServer(cfg NodeConfig) (*Node, error) {
	if cfg.BrokerListen != "" {
		return nil, fmt.Errorf("%w: a name-server-only node has no broker listener (listenPort)", ErrConfig)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	s, err := New(nil, cfg.Server)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	n := &Node{Server: s, Addr: AdvertisedAddr(ln.Addr())}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = s.Serve(ln)
	}()
	return n, nil
}
