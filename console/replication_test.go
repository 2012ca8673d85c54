package console_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/console"
)

// TestReplicationPageData: /api/replication says "no group" without
// Config.Replication, and passes the group and members through with it.
func TestReplicationPageData(t *testing.T) {
	e := newEnv(t, console.Config{})
	var r console.Replication
	e.get("/api/replication", &r)
	if r.Enabled || len(r.Members) != 0 {
		t.Fatalf("a node without a group: %+v", r)
	}
	st := &cluster.Status{State: "Leader", Term: 4, AppliedIndex: 90}
	e = newEnv(t, console.Config{Replication: func(context.Context) (cluster.GroupInfo, []cluster.MemberStatus, error) {
		return cluster.GroupInfo{GroupID: "g-1", BrokerName: "broker-a", Leader: "127.0.0.1:7001"},
			[]cluster.MemberStatus{{ID: "n1", Addr: "127.0.0.1:7001", Role: "leader", Status: st, Health: "ok"},
				{ID: "n2", Addr: "127.0.0.1:7002", Role: "follower", Health: "unreachable: connection refused"}}, nil
	}})
	e.get("/api/replication", &r)
	if !r.Enabled || r.GroupID != "g-1" || r.Leader != "127.0.0.1:7001" || len(r.Members) != 2 ||
		r.Members[0].Status == nil || r.Members[0].Status.Term != 4 || r.Members[1].Health != "unreachable: connection refused" {
		t.Fatalf("replication %+v", r)
	}
}
