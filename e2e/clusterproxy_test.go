package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
)

// faultProxy is the nemesis's network: one TCP proxy in front of each
// replica's Raft port. Replicas dial their peers' proxies from their own
// loopback IP (127.0.0.11, .12, .13: cluster.NewTCPTransport dials from
// its bind IP), so a proxy knows which replica a connection comes from
// and drops the links that a partition cuts, including open ones.
type faultProxy struct {
	mu    sync.Mutex
	cut   map[[2]int]bool // {from, to} links dropped
	conns map[[2]int][]net.Conn
	lns   []net.Listener
	wg    sync.WaitGroup
}

// newFaultProxy starts proxies for targets (replica i's Raft address) and
// returns their addresses; srcIP maps a source IP to its replica.
func newFaultProxy(t *testing.T, targets []string, srcIP map[string]int) (*faultProxy, []string) {
	p := &faultProxy{cut: map[[2]int]bool{}, conns: map[[2]int][]net.Conn{}}
	var addrs []string
	for to, target := range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.lns = append(p.lns, ln)
		addrs = append(addrs, ln.Addr().String())
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
				from, ok := srcIP[ip]
				if !ok {
					from = -1
				}
				go p.pipe(c, from, to, target)
			}
		}()
	}
	t.Cleanup(p.close)
	return p, addrs
}

func (p *faultProxy) pipe(c net.Conn, from, to int, target string) {
	link := [2]int{from, to}
	p.mu.Lock()
	if p.cut[link] {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut[link] {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[link] = append(p.conns[link], c, up)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
}

// isolate cuts every link to and from replica i (and closes the open
// ones); heal restores them all.
func (p *faultProxy) isolate(i, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for j := range n {
		if j == i {
			continue
		}
		for _, l := range [][2]int{{i, j}, {j, i}} {
			p.cut[l] = true
			for _, c := range p.conns[l] {
				_ = c.Close()
			}
			delete(p.conns, l)
		}
	}
}

func (p *faultProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = map[[2]int]bool{}
}

func (p *faultProxy) close() {
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	p.mu.Lock()
	for _, cs := range p.conns {
		for _, c := range cs {
			_ = c.Close()
		}
	}
	p.mu.Unlock()
}
