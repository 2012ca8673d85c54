package server_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestBrokerRegistersAgainAfterLostConnection: a name server forgets the
// brokers registered on a connection that closes; the broker registers
// again within a few seconds, not at its next 30 s period.
func TestBrokerRegistersAgainAfterLostConnection(t *testing.T) {
	_, ns := nameServer(t, nil)
	p := newCutProxy(t, ns)
	n := dialAddr(t, ns)
	a := brokerEnv(t, "broker-a", p.addr)
	waitUntil(t, "broker-a routed", func() bool { return getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] == a.adr })
	p.cut()
	waitUntil(t, "broker-a forgotten with its connection", func() bool { return getRoute(t, n, "TBW102").addrsOf("broker-a") == nil })
	start := time.Now()
	waitUntil(t, "broker-a routed again", func() bool { return getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] == a.adr })
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("registered again after %v", d)
	}
}

// cutProxy forwards TCP connections to target; cut closes the open ones.
type cutProxy struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); p.cut(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
