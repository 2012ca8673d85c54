package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/internal/testport"
)

// addNode appends a node to g's slices (not started) and returns its index.
func (g *group) addNode(id string) int {
	g.t.Helper()
	addr := fmt.Sprintf("10.0.0.%d:7000", len(g.peers)+1)
	if g.tcp {
		addr = testport.Addr(g.t, "127.0.0.1")
	}
	g.peers = append(g.peers, cluster.Peer{ID: id, Addr: addr})
	g.dirs = append(g.dirs, g.t.TempDir())
	g.nodes = append(g.nodes, nil)
	g.trans = append(g.trans, nil)
	return len(g.peers) - 1
}

// members waits until the leader's configuration has want members and
// returns them.
func (g *group) members(want int) []cluster.Peer {
	g.t.Helper()
	var ms []cluster.Peer
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ms = g.nodes[g.leader()].Info().Members; len(ms) == want {
			return ms
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatalf("the group has members %v, want %d", ms, want)
	return nil
}

// TestJoinRunningGroup: an empty node started with Join, whose peer list
// names the three running nodes (whose own lists do not change), asks to
// be added, is caught up from the leader's CommitLog (the log before was
// compacted) and ends byte-identical; the others restart with their
// unchanged peer lists; removing it stops its replication.
func TestJoinRunningGroup(t *testing.T) {
	t.Parallel()
	reg := &registry{}
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		compact(nc)
		cluster.AdminVia(nc, reg.get)
	})
	reg.sync(g)
	for i := range 200 {
		g.send(fmt.Sprint("T", i%2), int32(i%4), strings.Repeat("c", i%900), "")
	}
	if err := g.nodes[g.leader()].Snapshot(); err != nil {
		t.Fatal(err)
	}
	j := g.addNode("n4")
	nc := g.nodeConfig(j)
	// It names one node only, which may be a follower: that one points
	// it to the leader.
	nc.Cluster.Join, nc.Cluster.Peers = true, g.peers[:1]
	n4, err := g.open(j, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[j] = n4
	reg.sync(g)
	g.members(4)
	// Its broker id follows the first members' (1, 2, 3), not its short
	// peer list's length.
	waitFor(t, "the joined node's broker id", func() bool { return n4.BrokerID() == 4 })
	g.send("T0", 0, "after the join", "")
	end := g.converge()
	g.sameFiles("commitlog", end)
	g.sameFiles("consumequeue", -1)
	waitSnapshotInstalled(t, n4, "the new node")

	// A first member restarts with its unchanged peer list.
	f := (g.leader() + 1) % 3
	g.stop(f)
	g.start(f)
	reg.sync(g)
	g.send("T1", 1, "after the restart", "")
	end = g.converge()
	g.sameFiles("commitlog", end)

	// The joined node restarts too, and stays a member.
	g.stop(j)
	n4, err = g.open(j, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[j] = n4
	reg.sync(g)
	g.send("T1", 2, "after its restart", "")
	end = g.converge()
	g.sameFiles("commitlog", end)

	if err := g.nodes[g.leader()].RemoveServer("n4"); err != nil {
		t.Fatal(err)
	}
	g.members(3)
	held := n4.AppliedOffset()
	g.stop(j)
	g.send("T0", 3, "after the removal", "")
	if end := g.converge(); end <= held {
		t.Fatalf("no progress after the removal: %d", end)
	}
	if g.nodes[g.leader()].RemoveServer("n4") == nil {
		t.Fatal("removing a node that is not a member succeeded")
	}
}

// TestJoinRefused: a joining node with another CommitLog file size,
// another brokerName, or another group's identity in its store is refused
// by the leader with the reason, and the group keeps its three members.
func TestJoinRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		tune       func(nc *cluster.NodeConfig, dir string)
	}{
		{"file size", "CommitLog file size", func(nc *cluster.NodeConfig, _ string) { nc.Broker.Store.CommitLogFileSize = 2 * testFileSize }},
		{"broker name", "brokerName", func(nc *cluster.NodeConfig, _ string) { nc.BrokerName = "broker-b" }},
		{"foreign store", "foreign store directory", func(_ *cluster.NodeConfig, dir string) {
			other := `{"groupId":"0000","brokerName":"broker-a","commitLogFileSize":65536,"peers":[]}`
			if err := os.MkdirAll(filepath.Join(dir, "raft"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "raft", "group.json"), []byte(other), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &registry{}
			g := newGroup(t, 3, func(nc *cluster.NodeConfig) { cluster.AdminVia(nc, reg.get) })
			reg.sync(g)
			g.send("T", 0, "x", "")
			j := g.addNode("n4")
			nc := g.nodeConfig(j)
			nc.Cluster.Join, nc.Cluster.Peers = true, g.peers[:3]
			tc.tune(&nc, g.dirs[j])
			n4, err := g.open(j, nc)
			if err != nil {
				t.Fatal(err)
			}
			g.nodes[j] = n4
			waitFor(t, "the node to be refused", func() bool { return n4.Err() != nil })
			if err := n4.Err(); !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refusal: %v, want %q", err, tc.want)
			}
			if ms := g.nodes[g.leader()].Info().Members; len(ms) != 3 {
				t.Fatalf("members %v after a refused join", ms)
			}
		})
	}
}

// TestAddRemoveNodeOverTCP: the operator's AddNode and RemoveNode, sent
// to a follower's Raft port (which points to the leader), add a node that
// was started with Join and no peers, and remove it; QueryGroup reports
// the membership.
func TestAddRemoveNodeOverTCP(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, nil)
	for i := range 20 {
		g.send("T", int32(i%4), fmt.Sprint("m", i), "")
	}
	l := g.leader()
	via := g.peers[(l+1)%3].Addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gi, err := (cluster.Dialer{}).QueryGroup(ctx, via)
	if err != nil {
		t.Fatal(err)
	}
	if len(gi.Members) != 3 || gi.GroupID == "" || gi.Leader != g.peers[l].Addr {
		t.Fatalf("group info %+v", gi)
	}
	j := g.addNode("n4")
	nc := g.nodeConfig(j)
	nc.Cluster.Join, nc.Cluster.Peers = true, nil
	n4, err := g.open(j, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[j] = n4
	if err := (cluster.Dialer{}).AddNode(ctx, via, "n5", g.peers[j].Addr); err == nil || !strings.Contains(err.Error(), `is "n4", not "n5"`) {
		t.Fatalf("adding a node under another id: %v", err)
	}
	nobody := testport.Addr(t, "127.0.0.1")
	if err := (cluster.Dialer{}).AddNode(ctx, via, "n6", nobody); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("adding a node that does not run: %v", err)
	}
	if err := (cluster.Dialer{}).AddNode(ctx, via, "n4", g.peers[j].Addr); err != nil {
		t.Fatal(err)
	}
	g.members(4)
	end := g.converge()
	g.sameFiles("commitlog", end)
	if err := (cluster.Dialer{}).RemoveNode(ctx, via, "n4"); err != nil {
		t.Fatal(err)
	}
	g.members(3)
	if err := (cluster.Dialer{}).RemoveNode(ctx, via, "n9"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("removing a non-member: %v", err)
	}
}

// TestRemovedNodeStaysRemoved: a removed node restarted with Join and its
// store sees its removal in its own configuration and holds still (it
// does not ask to join and says why and how to come back), until an
// operator adds it back; removed again and restarted on a wiped
// directory, it joins by itself.
func TestRemovedNodeStaysRemoved(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, nil)
	g.send("T", 0, "before", "")
	j := g.addNode("n4")
	nc := g.nodeConfig(j)
	nc.Cluster.Join, nc.Cluster.Peers = true, g.peers[:3]
	reopen := func(nc cluster.NodeConfig) {
		t.Helper()
		n, err := g.open(j, nc)
		if err != nil {
			t.Fatal(err)
		}
		g.nodes[j] = n
	}
	reopen(nc)
	g.members(4)
	g.converge()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	remove := func() {
		t.Helper()
		if err := (cluster.Dialer{}).RemoveNode(ctx, g.peers[g.leader()].Addr, "n4"); err != nil {
			t.Fatal(err)
		}
		g.members(3)
		// The leader's last replication to it carries its removal, or,
		// when that one attempt fails (hashicorp/raft does not retry it),
		// n4 hears from no leader and asks: a few election timeouts.
		deadline := time.Now().Add(30 * time.Second)
		for g.nodes[j].Removed() == nil {
			if time.Now().After(deadline) {
				t.Fatalf("n4 does not know of its removal after 30 s: members %v", g.nodes[j].Info().Members)
			}
			time.Sleep(10 * time.Millisecond)
		}
		g.stop(j)
	}
	remove()

	logs := &logBuffer{}
	withLogs := nc
	withLogs.Cluster.Logger = slog.New(slog.NewTextHandler(logs, nil))
	reopen(withLogs)
	logs.waitLog(t, "removed from the group", "wipe its store directory", "admin cluster add-node --id n4")
	if err := g.nodes[j].Removed(); !errors.Is(err, cluster.ErrRemoved) {
		t.Fatalf("restarted after its removal: Removed() = %v", err)
	}
	if ms := g.nodes[g.leader()].Info().Members; len(ms) != 3 {
		t.Fatalf("a removed node restarted with its store rejoined: members %v", ms)
	}
	if err := g.nodes[j].Err(); err != nil {
		t.Fatalf("the removed node stopped instead of waiting for an operator: %v", err)
	}
	if strings.Contains(logs.String(), "asking to join the group") {
		t.Fatalf("the removed node asked to join:\n%s", logs.String())
	}
	// The operator adds it back: it is let in with its store.
	if err := (cluster.Dialer{}).AddNode(ctx, g.peers[g.leader()].Addr, "n4", g.peers[j].Addr); err != nil {
		t.Fatal(err)
	}
	g.members(4)
	waitFor(t, "n4 to see that it was added back", func() bool { return g.nodes[j].Removed() == nil })
	g.send("T", 1, "after the add-back", "")
	end := g.converge()
	g.sameFiles("commitlog", end)

	// Removed again, and restarted on an empty directory: it joins.
	remove()
	g.dirs[j] = t.TempDir()
	nc.Dir = g.dirs[j]
	reopen(nc)
	g.members(4)
}

// TestRemovedWhileDownHoldsStill: a node removed while it was down comes
// back with a configuration that still names it. It hears from no
// leader, asks the group, learns from the leader that it was removed,
// and stops standing for election: it neither campaigns nor raises its
// term past the group's.
// Restarted again, its marker holds it still from the start. An
// operator's add-node brings it back, and it replicates again.
func TestRemovedWhileDownHoldsStill(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 4, true, func(nc *cluster.NodeConfig) {
		if nc.Cluster.NodeID == "n4" {
			// Short timeouts: it stands for election often when it can.
			nc.Cluster.HeartbeatTimeout, nc.Cluster.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
			nc.Cluster.LeaderLeaseTimeout = 150 * time.Millisecond
		}
	})
	const j = 3
	g.send("T", 0, "before", "")
	g.converge()
	g.stop(j)
	l := g.leader()
	if err := g.nodes[l].RemoveServer("n4"); err != nil {
		t.Fatal(err)
	}
	g.members(3)
	// The three restart, so that no replication to n4 is left to deliver
	// its removal when it comes back: it can learn it only by asking.
	for i := range 3 {
		g.stop(i)
	}
	for i := range 3 {
		g.start(i)
	}
	g.send("T", 1, "while n4 is out", "")
	l = g.leader()
	term := g.nodes[l].Status().Term

	logs := &logBuffer{}
	reopen := func() {
		t.Helper()
		nc := g.nodeConfig(j)
		cluster.RaftLogInfo(&nc)
		nc.Cluster.Logger = slog.New(slog.NewTextHandler(logs, nil))
		n, err := g.open(j, nc)
		if err != nil {
			t.Fatal(err)
		}
		g.nodes[j] = n
	}
	reopen()
	logs.waitLog(t, "removed from the group", "learned from leader "+g.peers[l].ID, "admin cluster add-node --id n4")
	if err := g.nodes[j].Removed(); !errors.Is(err, cluster.ErrRemoved) {
		t.Fatalf("Removed() = %v", err)
	}
	// It stands for no election once it knows, over ten of its heartbeat
	// timeouts (Raft's own log counts its campaigns: a candidate whose
	// pre-vote failed stays a candidate and tries again every election
	// timeout, which Status' counter of state changes does not show).
	campaigns := func() int { return strings.Count(logs.String(), "entering candidate state") }
	quiet := func(what string, allowed int) {
		t.Helper()
		from := campaigns()
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if c, s := campaigns(), g.nodes[j].Status(); c > from+allowed || s.State == "Leader" {
				t.Fatalf("%s: the removed node stood for election %d times: %+v", what, c-from, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// A removed node disrupts the group by raising the term (its
		// vote requests carry a higher one, and the leader steps down on
		// seeing it); it hears from no leader, so its own term rises only
		// if it campaigns, by one a campaign at most. The three may still change leader by
		// themselves (a stall past their heartbeat timeout, as the race
		// detector on a loaded host causes): that is not its doing.
		if s := g.nodes[j].Status(); s.Term > term+uint64(allowed) {
			t.Fatalf("%s: the removed node's term rose past the group's %d (by more than its %d allowed campaigns): %+v",
				what, term, allowed, s)
		}
		if now := g.leader(); now != l {
			t.Logf("%s: the group's leader moved from %s to %s by itself (the removed node stayed at term %d or below)",
				what, g.peers[l].ID, g.peers[now].ID, term)
		}
	}
	// One campaign may be under way, with the timeout it began with.
	quiet("restarted removed", 1)

	// Restarted again, the marker holds it still from the start.
	g.stop(j)
	reopen()
	if err := g.nodes[j].Removed(); !errors.Is(err, cluster.ErrRemoved) {
		t.Fatalf("restarted with the marker: Removed() = %v", err)
	}
	quiet("restarted with the marker", 0)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l = g.leader() // it may have moved by itself
	if err := (cluster.Dialer{}).AddNode(ctx, g.peers[l].Addr, "n4", g.peers[j].Addr); err != nil {
		t.Fatal(err)
	}
	g.members(4)
	waitFor(t, "n4 to see that it was added back", func() bool { return g.nodes[j].Removed() == nil })
	g.send("T", 2, "after the add-back", "")
	end := g.converge()
	g.sameFiles("commitlog", end)
}
