package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestTransferLeaderOverTCP: an operator's transfer, sent to a follower's
// Raft port (which points to the leader), moves leadership to the named
// member, then to Raft's pick; sends work after each; unknown members
// are refused.
func TestTransferLeaderOverTCP(t *testing.T) {
	g := newGroupOn(t, 3, true, nil)
	g.send("T", 0, "before", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := g.leader()
	to := (l + 2) % 3
	via := g.peers[(l+1)%3].Addr
	if err := (cluster.Dialer{}).TransferLeader(ctx, via, g.peers[to].ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the named member to lead", func() bool { return g.nodes[to].Writable() })
	g.send("T", 1, "after the transfer", "")

	if err := (cluster.Dialer{}).TransferLeader(ctx, via, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leader to hand over", func() bool { return !g.nodes[to].Writable() })
	if g.leader() == to {
		t.Fatal("the leader that handed over leads again")
	}
	g.send("T", 2, "after the second transfer", "")
	end := g.converge()
	g.sameFiles("commitlog", end)

	if err := (cluster.Dialer{}).TransferLeader(ctx, via, "n9"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("transfer to a non-member: %v", err)
	}
}
