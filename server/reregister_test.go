package server_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// TestBrokerRegistersAgainAfterLostConnection: a broker whose connection
// to a name server closes registers again on a new connection at the next
// check (a second), not at its 30 s period (the name server may have
// restarted and forgotten it); the name server kept routing it meanwhile.
func TestBrokerRegistersAgainAfterLostConnection(t *testing.T) {
	_, ns := nameServer(t, nil)
	p := newCutProxy(t, ns)
	n := dialAddr(t, ns)
	a := brokerEnv(t, "broker-a", p.addr)
	waitUntil(t, "broker-a routed", func() bool { return getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] == a.adr })
	before := p.accepted()
	p.cut()
	if getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] != a.adr {
		t.Fatal("broker-a forgotten with its connection")
	}
	waitUntil(t, "broker-a connected again", func() bool { return p.accepted() > before })
	if getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] != a.adr {
		t.Fatal("broker-a not routed after it connected again")
	}
}

// cutProxy forwards TCP connections to target; cut closes the open ones.
type cutProxy struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
	n     int
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
			p.n++
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

// accepted returns how many connections the proxy forwarded.
func (p *cutProxy) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
