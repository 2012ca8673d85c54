package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestUnknownEntryKindStopsReplicas: an entry of a kind this version does
// not know (a newer leader's during a rolling upgrade) may carry
// messages, so every replica stops applying the log with ErrBadEntry
// instead of skipping it, and says so in Err. Before, the entry was
// answered with ErrBadEntry and the replicas went on without it.
func TestUnknownEntryKindStopsReplicas(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	g.send("T", 0, "before", "")
	ln := g.nodes[g.leader()]
	if err := ln.Raft().Apply([]byte{200, 1, 2, 3}, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for i, n := range g.nodes {
		waitFor(t, "the replica to stop applying", func() bool { return n.Err() != nil })
		if err := n.Err(); !errors.Is(err, cluster.ErrBadEntry) {
			t.Errorf("%s: Err() = %v, want ErrBadEntry", g.peers[i].ID, err)
		}
	}
}
