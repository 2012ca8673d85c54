package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestTransferLeaderOverTCP: an operator's transfer, sent to a follower's
// Raft port (which points to the leader), moves leadership to the named
// member and then to Raft's pick, while senders keep sending: every
// acknowledged send is in the replicas, which end byte-identical, and
// every node shuts down afterwards (the pipelined replication that
// hashicorp/raft can leave blocked after a transfer is off). A
// non-member, a non-voter and the leader itself are refused as targets.
func TestTransferLeaderOverTCP(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, nil)
	acked := []ackedSend{sendAcked(g, 0)}
	var mu sync.Mutex
	stop, wait := startSenders(g.nodes, 3, &mu, &acked)
	// more waits until the senders have 10 more sends acknowledged.
	more := func(what string) {
		t.Helper()
		mu.Lock()
		from := len(acked)
		mu.Unlock()
		waitFor(t, "10 sends acknowledged "+what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= from+10
		})
	}
	more("before the transfers")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := cluster.Dialer{}

	l := g.leader()
	to := (l + 2) % 3
	viaIdx := (l + 1) % 3
	via := g.peers[viaIdx].Addr
	// A majority acknowledged the sends; the member asked may be the
	// one that has not heard from the leader yet, and would answer that
	// it knows of none.
	waitFor(t, "the member asked to know the leader", func() bool {
		addr, _ := g.nodes[viaIdx].Raft().LeaderWithID()
		return addr != ""
	})
	tr, err := d.TransferLeader(ctx, via, g.peers[to].ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.From != g.peers[l].ID || tr.FromAddr != g.peers[l].Addr || tr.To != g.peers[to].ID || tr.ToAddr != g.peers[to].Addr {
		t.Fatalf("transfer from %s to %s reported %+v", g.peers[l].ID, g.peers[to].ID, tr)
	}
	waitFor(t, "the named member to lead", func() bool { return g.nodes[to].Writable() })
	more("by the named member")

	waitFor(t, "the member asked to know the new leader", func() bool {
		_, id := g.nodes[viaIdx].Raft().LeaderWithID()
		return string(id) == g.peers[to].ID
	})
	tr, err = d.TransferLeader(ctx, via, "")
	if err != nil {
		t.Fatal(err)
	}
	if tr.From != g.peers[to].ID || tr.To == tr.From || tr.To == "" {
		t.Fatalf("transfer to Raft's pick reported %+v", tr)
	}
	waitFor(t, "the leader to hand over", func() bool { return !g.nodes[to].Writable() && g.leader() != to })
	more("by Raft's pick")
	stop()
	wait()

	l = g.leader()
	waitFor(t, "the member asked to know the leader", func() bool {
		_, id := g.nodes[viaIdx].Raft().LeaderWithID()
		return string(id) == g.peers[l].ID
	})
	for _, c := range []struct{ to, want string }{
		{"n9", "n9 is not a member of the group (members: n1, n2, n3)"},
		{g.peers[l].ID, g.peers[l].ID + " leads already"},
	} {
		if _, err := d.TransferLeader(ctx, via, c.to); !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("transfer to %s: %v, want %q", c.to, err, c.want)
		}
	}
	if err := g.nodes[l].Raft().AddNonvoter("n8", "127.0.0.1:1", 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.TransferLeader(ctx, via, "n8"); !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), "n8 is not a voter") {
		t.Fatalf("transfer to a non-voter: %v", err)
	}
	if err := g.nodes[l].RemoveServer("n8"); err != nil {
		t.Fatal(err)
	}

	end := g.converge()
	g.sameFiles("commitlog", end)
	for i, n := range g.nodes {
		for _, a := range acked {
			if err := holds(n.Broker().Store(), a); err != nil {
				t.Fatalf("%s lost an acknowledged send: %v", g.peers[i].ID, err)
			}
		}
	}
	t.Logf("%d sends acknowledged across two transfers", len(acked))

	// Every node shuts down (the old leaders included).
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.closeAll()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the nodes did not shut down within 60 s after the transfers")
	}
}
