package namesrv

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// TestKeepsBrokerWhoseConnectionCloses: a closed connection
// forgets no broker; a broker is forgotten only when it has not registered
// for the expiry (BROKER_CHANNEL_EXPIRED_TIME), measured on the injected
// clock, and a broker that keeps registering on a new connection stays.
func TestKeepsBrokerWhoseConnectionCloses(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Unix(1_700_000_000, 0))
	rt := NewRouteTable(clock, 120*time.Second) // BROKER_CHANNEL_EXPIRED_TIME
	topics := map[string]config.TopicConfig{"T": config.NewTopicConfig("T")}
	oldConn, newConn := &remoting.Conn{}, &remoting.Conn{}
	reg := func(name, addr string, c *remoting.Conn) {
		rt.Register(Registration{Cluster: "C", Name: name, Addr: addr, Topics: topics, Conn: c})
	}
	routed := func(name string) bool { return rt.Route("T").brokerAddrs(name)["0"] != "" }
	reg("live", "127.0.0.1:1", oldConn)
	reg("silent", "127.0.0.1:2", oldConn)

	if gone := rt.ConnClosed(oldConn); len(gone) != 2 {
		t.Fatalf("connClosed reports %v, want both brokers detached", gone)
	}
	if !routed("live") || !routed("silent") {
		t.Fatal("a broker was forgotten with its connection")
	}
	// "live" registers every 30 s on a new connection; "silent" stops.
	for range 4 {
		clock.Advance(30 * time.Second)
		reg("live", "127.0.0.1:1", newConn)
		if gone := rt.Expire(); len(gone) != 0 {
			t.Fatalf("expired at %v after the last registration: %v", clock.Since(time.Unix(1_700_000_000, 0)), gone)
		}
	}
	clock.Advance(time.Millisecond)
	if gone := rt.Expire(); len(gone) != 1 || gone[0].Name != "silent" {
		t.Fatalf("past the expiry: expired %v, want the silent broker", gone)
	}
	if !routed("live") || routed("silent") {
		t.Fatal("wrong broker expired")
	}
}

// brokerAddrs returns the members of group name in rd.
func (rd TopicRouteData) brokerAddrs(name string) map[string]string {
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == name {
			return bd.BrokerAddrs
		}
	}
	return nil
}
