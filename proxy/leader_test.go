package proxy_test

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// TestLeaderEndpoint: in a replicated group, routes and assignments name
// the leader's gRPC endpoint, following it as it changes, and this
// proxy's own while no leader is known.
func TestLeaderEndpoint(t *testing.T) {
	var leader atomic.Value
	leader.Store("")
	e := newEnv(t, func(c *proxy.Config) { c.LeaderEndpoint = func() string { return leader.Load().(string) } })
	ctx := ctxT(t)
	endpoint := func() string {
		t.Helper()
		r, err := e.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}})
		if err != nil || r.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("route: %v %v", r, err)
		}
		a := r.GetMessageQueues()[0].GetBroker().GetEndpoints().GetAddresses()[0]
		ra, err := e.cl.QueryAssignment(ctx, &rmqpb.QueryAssignmentRequest{Topic: &rmqpb.Resource{Name: "T"},
			Group: &rmqpb.Resource{Name: "G"}})
		if err != nil || ra.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("assignment: %v %v", ra, err)
		}
		b := ra.GetAssignments()[0].GetMessageQueue().GetBroker().GetEndpoints().GetAddresses()[0]
		if a.GetHost() != b.GetHost() || a.GetPort() != b.GetPort() {
			t.Fatalf("route names %v, assignment %v", a, b)
		}
		return net.JoinHostPort(a.GetHost(), itoa(a.GetPort()))
	}
	if got := endpoint(); got != e.addr {
		t.Errorf("no leader known: route names %s, want this proxy's %s", got, e.addr)
	}
	leader.Store("10.0.0.2:8082")
	if got := endpoint(); got != "10.0.0.2:8082" {
		t.Errorf("route names %s, want the leader's 10.0.0.2:8082", got)
	}
	leader.Store("[::1]:8083")
	if got := endpoint(); got != "[::1]:8083" {
		t.Errorf("after a failover the route names %s, want the new leader's [::1]:8083", got)
	}
}
