package cluster_test

import (
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestElectionsCounted: every node counts the elections it starts and
// those it wins; stopping the leader makes another node start and win
// one more.
func TestElectionsCounted(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	l := g.leader()
	before := make([]cluster.Status, 3)
	var started int64
	for i, n := range g.nodes {
		before[i] = n.Status()
		started += before[i].ElectionsStarted
		if before[i].ElectionsStarted < before[i].ElectionsWon {
			t.Errorf("%s won more elections than it started: %+v", g.peers[i].ID, before[i])
		}
	}
	// At least one: on a loaded machine leadership may have moved already.
	if before[l].ElectionsWon < 1 || before[l].ElectionsStarted < 1 || started < 1 {
		t.Fatalf("leader %s: %+v (elections started in the group: %d)", g.peers[l].ID, before[l], started)
	}

	g.stop(l)
	l2 := g.leader()
	after := g.nodes[l2].Status()
	if after.ElectionsWon < before[l2].ElectionsWon+1 || after.ElectionsStarted < before[l2].ElectionsStarted+1 ||
		after.ElectionsStarted < after.ElectionsWon {
		t.Fatalf("new leader %s: before %+v, after %+v", g.peers[l2].ID, before[l2], after)
	}
}

// TestLeaderViewOfFollowers: the leader reports, for each follower, the
// entries it confirmed and its lag; a stopped follower's lag grows with
// the log while the live one keeps up; followers report no such view.
func TestLeaderViewOfFollowers(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	for i := range 10 {
		g.send("T", 0, fmt.Sprintf("body-%03d", i), "")
	}
	g.converge()
	l := g.leader()
	caughtUp := func(want int) func() bool {
		return func() bool {
			s := g.nodes[l].Status()
			n := 0
			for _, f := range s.Followers {
				if f.MatchIndex == s.LastLogIndex && f.LagEntries == 0 && f.LastContactMs >= 0 && f.LastContactMs < 10_000 {
					n++
				}
			}
			return len(s.Followers) == 2 && n == want
		}
	}
	waitFor(t, "the leader to see both followers caught up", caughtUp(2))
	for i, n := range g.nodes {
		if s := n.Status(); i != l && s.Followers != nil {
			t.Errorf("follower %s reports followers: %+v", g.peers[i].ID, s.Followers)
		}
	}

	f := (l + 1) % 3
	g.stop(f)
	for i := range 10 {
		g.send("T", 0, fmt.Sprintf("late-%03d", i), "")
	}
	waitFor(t, "the leader to see the live follower caught up", caughtUp(1))
	s := g.nodes[l].Status()
	for _, fs := range s.Followers {
		if fs.ID == g.peers[f].ID && (fs.MatchIndex == 0 || fs.LagEntries < 10 || fs.MatchIndex+fs.LagEntries != s.LastLogIndex) {
			t.Errorf("stopped follower %+v, leader's last index %d", fs, s.LastLogIndex)
		}
	}
}
