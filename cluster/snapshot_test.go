package cluster_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// compact makes snapshots cheap to trigger and the log short after them.
func compact(nc *cluster.NodeConfig) {
	nc.Cluster.SnapshotThreshold = 20
	nc.Cluster.TrailingLogs = 5
	nc.Cluster.SnapshotInterval = time.Hour
	nc.Cluster.LogSegmentSize = 16 << 10
}

// firstLogSegment returns the path of the Raft log's first segment file
// in the store directory dir, if it is still there: raft-wal's or
// raftlog's (either directory).
func firstLogSegment(dir string) []string {
	wal, _ := filepath.Glob(filepath.Join(dir, "raft", "wal", fmt.Sprintf("%020d-*.wal", 1)))
	rl, _ := filepath.Glob(filepath.Join(dir, "raft", "log", fmt.Sprintf("%020d.seg", 1)))
	rr, _ := filepath.Glob(filepath.Join(dir, "raft", "records", fmt.Sprintf("%020d.seg", 1)))
	return append(append(wal, rl...), rr...)
}

// waitSnapshotInstalled fails the test unless n's Raft records a
// snapshot, which for a node that took none itself means the leader sent
// one (InstallSnapshot). It waits rather than reads once: Raft records
// the installed snapshot only after the state machine has restored it,
// so a converge that sees the follower's CommitLog caught up can come
// before the record. A node caught up from the log never gets one
// (compact's SnapshotInterval is an hour), and the wait times out.
// The log must also have been compacted past the node's position by
// more than one 16 KiB segment: raft-wal still reads compacted entries
// that are in its open segment.
func waitSnapshotInstalled(t *testing.T, n *cluster.Node, what string) {
	t.Helper()
	waitFor(t, what+" to be caught up by a snapshot", func() bool {
		return n.Raft().Stats()["last_snapshot_index"] != "0"
	})
}

// TestFollowerBehindCompactedLog: a follower is stopped, the leader
// writes and compacts its log past the follower's position, and the
// follower is caught up from the leader's CommitLog (InstallSnapshot).
func TestFollowerBehindCompactedLog(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, compact)
	for i := range 40 {
		g.send("T", int32(i%4), fmt.Sprint("a", i), "")
	}
	g.converge()
	f := (g.leader() + 1) % 3
	g.stop(f)
	for i := range 400 {
		g.send("T", int32(i%4), strings.Repeat("b", i%700)+fmt.Sprint(i), "KEYS\x01k")
	}
	g.send("T", 0, "delayed", "DELAY\x011")
	l := g.leader()
	if err := g.nodes[l].Snapshot(); err != nil {
		t.Fatal(err)
	}
	if g.nodes[l].Raft().Stats()["last_snapshot_index"] == "0" {
		t.Fatal("no snapshot taken")
	}
	g.start(f)
	// The delayed message reaches T/0 when the leader's schedule service
	// delivers it, a replicated put of its own: the replicas compare
	// equal only after it (10 + 100 sends to T/0 before it).
	waitQueueMax(t, g.nodes[l], "T", 0, 111)
	end := g.converge()
	g.sameFiles("commitlog", end)
	g.sameFiles("consumequeue", -1)
	waitSnapshotInstalled(t, g.nodes[f], "the follower")
	if n := g.nodes[f].Status().SnapshotInstalls; n < 1 {
		t.Fatalf("the follower counts %d snapshot installs", n)
	}
	if n := g.nodes[l].Status().SnapshotInstalls; n != 0 {
		t.Fatalf("the leader counts %d snapshot installs", n)
	}
}

// TestNewNodeJoins: an empty node joins a running group and ends
// byte-identical, caught up by replaying the log while it is still there
// and by a snapshot (the leader's CommitLog) once it was compacted away.
// Both paths are forced, not left to the log store: in "log" the leader's
// snapshot keeps every entry (TrailingLogs above the log's length), so
// its first segment, with entry 1, is still on disk; in "snapshot" the
// compaction removes that segment from the disk (16 KiB segments), so
// the joiner cannot be caught up from the log. (raft-wal serves entries
// before a compaction point that are still in a segment it kept, so the
// compaction alone, with one large segment, proves nothing.)
func TestNewNodeJoins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		trailing uint64
		snapshot bool
	}{{"log", 100000, false}, {"snapshot", 5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, 3, func(nc *cluster.NodeConfig) { compact(nc); nc.Cluster.TrailingLogs = tc.trailing })
			for i := range 200 {
				g.send(fmt.Sprint("T", i%2), int32(i%4), strings.Repeat("c", i%900), "")
			}
			l := g.leader()
			if err := g.nodes[l].Snapshot(); err != nil {
				t.Fatal(err)
			}
			first := firstLogSegment(g.dirs[l])
			if tc.snapshot == (len(first) > 0) {
				t.Fatalf("the leader's Raft log segment holding entry 1: %v after its snapshot (snapshot path %v)", first, tc.snapshot)
			}
			g.peers = append(g.peers, cluster.Peer{ID: "n4", Addr: "10.0.0.4:7000"})
			g.dirs = append(g.dirs, t.TempDir())
			g.nodes = append(g.nodes, nil)
			g.trans = append(g.trans, nil)
			nc := g.nodeConfig(3)
			nc.Cluster.Join = true
			n4, err := g.open(3, nc)
			if err != nil {
				t.Fatal(err)
			}
			g.nodes[3] = n4
			if err := g.nodes[l].AddVoter("n4", "10.0.0.4:7000"); err != nil {
				t.Fatal(err)
			}
			g.send("T0", 0, "after the join", "")
			end := g.converge()
			g.sameFiles("commitlog", end)
			g.sameFiles("consumequeue", -1)
			if tc.snapshot {
				waitSnapshotInstalled(t, n4, "the new node")
			} else if n4.Raft().Stats()["last_snapshot_index"] != "0" {
				t.Fatal("the new node was caught up by a snapshot, want from the log")
			}
		})
	}
}

// TestRestartReplaysIdempotently: a node restarted after a snapshot
// re-applies the entries after it against the records it already has,
// writing nothing twice.
func TestRestartReplaysIdempotently(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, compact)
	for i := range 30 {
		g.send("T", 0, fmt.Sprint("a", i), "")
	}
	l := g.leader()
	f := (l + 1) % 3
	g.converge()
	if err := g.nodes[f].Snapshot(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		g.send("T", 0, fmt.Sprint("b", i), "")
	}
	before := g.converge()
	g.stop(f)
	g.start(f)
	end := g.converge()
	if end != before {
		t.Fatalf("applied offset %d after restart, %d before", end, before)
	}
	if got := g.nodes[f].Broker().Store().MaxOffsetInQueue("T", 0); got != 40 {
		t.Fatalf("T/0 has %d messages after the restart, want 40", got)
	}
	g.sameFiles("commitlog", end)
}

// TestForeignStoreRefused: a store directory with messages that belong
// to no group, and one that belongs to another group, are refused with
// errors that say so.
func TestForeignStoreRefused(t *testing.T) {
	t.Parallel()
	for _, store := range allLogStores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			foreignStoreRefused(t, store)
		})
	}
}

func foreignStoreRefused(t *testing.T, store string) {
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = store })
	for i := range 5 {
		g.send("T", 0, fmt.Sprint(i), "")
	}
	g.converge()
	l := g.leader()
	f := (l + 1) % 3
	g.stop(f)

	// The same CommitLog without its group identity: a plain store.
	if err := os.Remove(filepath.Join(g.dirs[f], "raft", "group.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.open(f, g.nodeConfig(f)); err == nil || !strings.Contains(err.Error(), "foreign store directory") {
		t.Fatalf("open a store of no group: %v", err)
	}
	_ = g.trans[f].Close()
	g.trans[f] = nil

	// Another group's identity, on a node that joins this group empty
	// of Raft state.
	other := `{"groupId":"0000","brokerName":"broker-a","commitLogFileSize":65536,"peers":[]}`
	if err := os.WriteFile(filepath.Join(g.dirs[f], "raft", "group.json"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"raft/wal", "raft/log", "raft/records", "raft/snapshots"} {
		if err := os.RemoveAll(filepath.Join(g.dirs[f], sub)); err != nil {
			t.Fatal(err)
		}
	}
	nc := g.nodeConfig(f)
	nc.Cluster.Join = true
	n, err := g.open(f, nc)
	if err != nil {
		t.Fatal(err)
	}
	g.nodes[f] = n
	waitFor(t, "the replica to refuse the group", func() bool { return n.Err() != nil })
	if err := n.Err(); !errors.Is(err, cluster.ErrDiverged) || !strings.Contains(err.Error(), "foreign store directory") {
		t.Fatalf("replica error: %v", err)
	}
}

// TestFileSizeMismatchRefused: a node with another CommitLog file size
// is refused by the group's identity check.
func TestFileSizeMismatchRefused(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		if nc.Cluster.NodeID == "n3" {
			nc.Broker.Store.CommitLogFileSize = 2 * testFileSize
		}
	})
	g.leader()
	waitFor(t, "a replica to refuse the group", func() bool {
		for _, n := range g.nodes {
			if n.Err() != nil {
				return true
			}
		}
		return false
	})
	for _, n := range g.nodes {
		if err := n.Err(); err != nil && !strings.Contains(err.Error(), "CommitLog file size") {
			t.Fatalf("replica error: %v", err)
		}
	}
}

// TestPeerListMismatchRefused: a node configured with another peer list
// is refused by the group's identity check.
func TestPeerListMismatchRefused(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		if nc.Cluster.NodeID == "n3" {
			ps := append([]cluster.Peer(nil), nc.Cluster.Peers...)
			ps = append(ps, cluster.Peer{ID: "n9", Addr: "10.0.0.9:7000"})
			nc.Cluster.Peers = ps
		}
	})
	waitFor(t, "a replica to refuse the group", func() bool {
		for _, n := range g.nodes {
			if n.Err() != nil {
				return true
			}
		}
		return false
	})
	for _, n := range g.nodes {
		if err := n.Err(); err != nil && !strings.Contains(err.Error(), "peer list") {
			t.Fatalf("replica error: %v", err)
		}
	}
}

// waitQueueMax waits until n's store holds want messages in topic's queue
// qid (a delivery by the node's own services has no event to wait on).
func waitQueueMax(t *testing.T, n *cluster.Node, topic string, qid int32, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Broker().Store().MaxOffsetInQueue(topic, qid) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d holds %d messages after 10 s, want %d", topic, qid, n.Broker().Store().MaxOffsetInQueue(topic, qid), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
