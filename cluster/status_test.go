package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/record"
)

// TestStatusReportsRaftAndRepairs: Status, and QueryGroup over the Raft
// port, tell the leader from the followers, their indexes and contact,
// and count the scrub's runs and the records it repaired.
func TestStatusReportsRaftAndRepairs(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, func(nc *cluster.NodeConfig) {
		nc.Cluster.ScrubInterval = 20 * time.Millisecond
		nc.Cluster.ScrubBytes = 2048
	})
	for i := range 30 {
		g.send("T", 0, fmt.Sprintf("body-%03d", i), "")
	}
	end := g.converge()
	l := g.leader()
	f := (l + 1) % 3
	off, err := g.nodes[f].Broker().Store().CommitLogOffsetInQueue("T", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(g.dirs[f], "commitlog", "00000000000000000000"), off+record.FixedOverhead+2)
	waitFor(t, "the background scrub to repair the record", func() bool { return g.nodes[f].Status().Repaired >= 1 })

	ls := g.nodes[l].Status()
	if ls.State != "Leader" || ls.ElectionsWon < 1 || ls.ElectionsStarted < ls.ElectionsWon || len(ls.Followers) != 2 ||
		ls.LastContactMs != 0 || ls.Term < 1 ||
		ls.AppliedIndex == 0 || ls.CommitIndex < ls.AppliedIndex || ls.LastLogIndex < ls.CommitIndex || ls.AppliedOffset != end {
		t.Fatalf("leader status %+v (applied offset want %d)", ls, end)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gi, err := (cluster.Dialer{}).QueryGroup(ctx, g.peers[f].Addr)
	if err != nil {
		t.Fatal(err)
	}
	fs := gi.Status
	if fs == nil {
		t.Fatal("QueryGroup carries no status")
	}
	if fs.State != "Follower" || fs.ElectionsWon != 0 || fs.Followers != nil || fs.Term != ls.Term || fs.LastContactMs < 0 ||
		fs.LastContactMs > 10_000 || fs.AppliedOffset != end || fs.Repaired < 1 || fs.ScrubRuns < 1 || fs.ScrubbedBytes <= 0 {
		t.Fatalf("follower status %+v (leader's %+v)", *fs, ls)
	}

	// Members, asked through a follower, lists everyone with the leader's
	// role; a stopped member is reported unreachable, not dropped.
	other := 3 - l - f
	g.stop(other)
	gi, rows, err := (cluster.Dialer{}).Members(ctx, g.peers[f].Addr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || gi.Leader != g.peers[l].Addr {
		t.Fatalf("members %+v of %+v", rows, gi)
	}
	for _, r := range rows {
		switch r.ID {
		case g.peers[l].ID:
			if r.Role != "leader" || r.Health != "ok" || r.Status == nil || r.LagEntries != 0 || r.LagBytes != 0 || r.LeaderView != nil {
				t.Errorf("leader row %+v", r)
			}
		case g.peers[f].ID:
			if r.Role != "follower" || r.Health != "ok" || r.Status == nil || r.LagBytes != 0 ||
				r.LeaderView == nil || r.LeaderView.MatchIndex == 0 {
				t.Errorf("follower row %+v", r)
			}
		default:
			if r.Status != nil || !strings.HasPrefix(r.Health, "unreachable: ") {
				t.Errorf("stopped member's row %+v", r)
			}
		}
	}
}
