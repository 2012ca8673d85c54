package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/cluster"
)

// TestStaleStateEntryDropped is the leadership flap that the state-entry
// lock cannot order: the leader captures its tables (topic Late), the
// topic is deleted, and the leadership goes to another node and comes
// back before the old leader's watchLeadership has noticed, so it may
// still propose what it captured before. Committed after the deletion,
// that entry would bring Late back on the followers only. It carries the
// term in which its tables were taken, and replicas drop it when it is
// committed in another term. In the broken variant they apply it, and
// Late is back on both followers.
func TestStaleStateEntryDropped(t *testing.T) {
	t.Parallel()
	back := func(t *testing.T, tune func(*cluster.NodeConfig)) []string {
		g := newGroup(t, 3, tune)
		l := g.leader()
		ln := g.nodes[l]
		if err := ln.Broker().Topics().Update(config.TopicConfig{TopicName: "Late", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
			t.Fatal(err)
		}
		for _, n := range g.nodes {
			waitFor(t, "Late on every replica", func() bool { _, ok := n.Broker().Topics().Get("Late"); return ok })
		}
		stale := cluster.StateEntry(ln) // captured in the leader's first term
		if err := ln.Broker().DeleteTopic(context.Background(), "Late"); err != nil {
			t.Fatal(err)
		}
		for _, n := range g.nodes {
			waitFor(t, "Late deleted on every replica", func() bool { _, ok := n.Broker().Topics().Get("Late"); return !ok })
		}
		// The lead goes to another node and back to ln.
		if err := ln.Raft().LeadershipTransfer().Error(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ln to step down", func() bool { return !ln.Writable() })
		other := g.leader()
		if err := g.nodes[other].Raft().LeadershipTransferToServer(raft.ServerID(g.peers[l].ID), raft.ServerAddress(g.peers[l].Addr)).Error(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ln to lead again", func() bool { return ln.Writable() })
		if err := ln.Raft().Apply(stale, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
		g.converge()
		time.Sleep(5 * 20 * time.Millisecond) // five state intervals
		g.converge()
		var out []string
		for i, n := range g.nodes {
			if _, ok := n.Broker().Topics().Get("Late"); ok {
				out = append(out, fmt.Sprintf("%s (leader %v)", g.peers[i].ID, i == l))
			}
		}
		return out
	}
	if got := back(t, nil); len(got) > 0 {
		t.Fatalf("the deleted topic Late is back on %v", got)
	}
	t.Run("broken variant", func(t *testing.T) {
		got := back(t, cluster.StaleStateTerm)
		if len(got) == 0 {
			t.Fatal("a state entry committed in a later term than its tables' was not applied: the test shows nothing")
		}
		t.Logf("caught: Late is back on %v", got)
	})
}
