package server

import (
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
)

// A requester's connection is found by its client id until the connection
// closes; a connection that sends with another client id keeps one entry.
func TestProducerRegistryRequesters(t *testing.T) {
	r := newProducerRegistry()
	a, b := &remoting.Conn{}, &remoting.Conn{}
	r.requested("id-1", a)
	r.requested("id-2", b)
	if r.findClient("id-1") != a || r.findClient("id-2") != b {
		t.Fatal("requesters not found by client id")
	}
	r.requested("id-3", a)
	if r.findClient("id-1") != nil || r.findClient("id-3") != a || len(r.requesters) != 2 {
		t.Fatalf("after a new client id on the same connection: %v", r.requesters)
	}
	r.connClosed(a)
	if r.findClient("id-3") != nil || r.findClient("id-2") != b || len(r.requestOf) != 1 {
		t.Fatalf("after close: %v", r.requesters)
	}
	r.heartbeat("id-2", []string{"PG"}, clientInfo{conn: a})
	if r.findClient("id-2") != a {
		t.Fatal("a heartbeat's connection comes first")
	}
}
