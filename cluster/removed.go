package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// A removed node stays removed. A node learns that it was removed in one
// of two ways: its own Raft configuration, which the leader's last
// replication to it carries, no longer names it (removed while it ran);
// or, its configuration still naming it because it was down at the
// removal, it hears from no leader and the group's leader, asked over the
// Raft port (op 6), answers in a term not older than its own with a
// configuration without it (a leader of that term holds every entry
// committed before it, the one that added this node included). It
// then writes Dir/raft/removed.json, logs why and how to come back, and
// holds still: it does not ask to join, and it stands for no election
// (its Raft heartbeat and election timeouts are raised out of reach, so
// that a node whose configuration still names it does not campaign; the
// members refuse its votes anyway, but each attempt is noise in their
// logs). It still answers a leader, so that an operator's add-node
// brings it back without a restart: once a leader replicates to it and
// its configuration names it again, the marker is deleted and its
// timeouts restored. Its store wiped, it joins as a new node.

// ErrRemoved reports a node that was removed from its group (Node.Removed).
var ErrRemoved = errors.New("cluster: this node was removed from its broker group")

// holdTimeout is a removed node's Raft heartbeat and election timeout:
// it never times out waiting for a leader.
const holdTimeout = 1000 * time.Hour

// removedMark is Dir/raft/removed.json.
type removedMark struct {
	GroupID string `json:"groupId"`
	// Term is the Raft term in which the node saw a configuration
	// without it.
	Term uint64 `json:"term"`
	// By is how the node learned it: "its own configuration" or the
	// leader that answered.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

func (n *Node) removedPath() string { return filepath.Join(n.cfg.Dir, "raft", "removed.json") }

// loadRemoved reads the marker of an earlier removal.
func (n *Node) loadRemoved() error {
	b, err := os.ReadFile(n.removedPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var m removedMark
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("cluster: %s: %w", n.removedPath(), err)
	}
	n.removed.Store(&m)
	return nil
}

// Removed returns why this node holds still (ErrRemoved, wrapped, with
// how to bring it back), or nil while it is not known to be removed.
func (n *Node) Removed() error {
	m := n.removed.Load()
	if m == nil {
		return nil
	}
	return fmt.Errorf("%w %s (term %d, learned from %s at %s): it neither joins nor stands for election; "+
		"wipe its store directory %s to join as a new node, or have an operator add it back "+
		"(rocketstore admin cluster add-node --id %s)", ErrRemoved, m.GroupID, m.Term, m.By,
		m.At.UTC().Format(time.RFC3339), n.cfg.Dir, n.ccfg.NodeID)
}

// markRemoved records the removal, holds the node's elections and logs
// the reason.
func (n *Node) markRemoved(m removedMark) {
	m.At = time.Now()
	if err := writeFileSync(n.removedPath(), m); err != nil {
		n.log.Error("removed from the group: marker not written (it is found again at the next start)", "err", err)
	}
	n.removed.Store(&m)
	n.holdElections(true)
	n.log.Error("removed from the group", "err", n.Removed())
}

// holdElections raises (hold) or restores Raft's timeouts.
func (n *Node) holdElections(hold bool) {
	c := raft.ReloadableConfig{TrailingLogs: n.ccfg.TrailingLogs, SnapshotInterval: n.ccfg.SnapshotInterval,
		SnapshotThreshold: n.ccfg.SnapshotThreshold, HeartbeatTimeout: n.ccfg.HeartbeatTimeout,
		ElectionTimeout: n.ccfg.ElectionTimeout}
	if hold {
		c.HeartbeatTimeout, c.ElectionTimeout = holdTimeout, holdTimeout
	}
	if err := n.raft.ReloadConfig(c); err != nil {
		n.log.Error("raft timeouts not reloaded", "hold", hold, "err", err)
	}
}

// ownConfig returns this node's latest Raft configuration (which
// hashicorp/raft gives without its index) and whether it names this
// node.
func (n *Node) ownConfig() (raft.Configuration, bool, error) {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return raft.Configuration{}, false, err
	}
	c := fut.Configuration()
	in := slices.ContainsFunc(c.Servers, func(s raft.Server) bool { return string(s.ID) == n.ccfg.NodeID })
	return c, in, nil
}

// groupID is the group identity in the store ("" before it is known).
func (n *Node) groupID() string {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	if n.fsm.group == nil {
		return ""
	}
	return n.fsm.group.GroupID
}

// checkRemoved looks at the node's own configuration: a node that holds
// the group's identity (it was a member) and whose configuration no
// longer names it was removed; a removed node that a leader replicates
// to again, in whose configuration it is, was added back. It reports
// whether the node is removed.
func (n *Node) checkRemoved() bool {
	conf, in, err := n.ownConfig()
	if err != nil {
		return n.removed.Load() != nil
	}
	if m := n.removed.Load(); m != nil {
		_, leader := n.raft.LeaderWithID()
		if !in || leader == "" || string(leader) == n.ccfg.NodeID {
			return true
		}
		if err := os.Remove(n.removedPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			n.log.Error("added back to the group: removal marker not deleted", "err", err)
		}
		n.removed.Store(nil)
		n.holdElections(false)
		n.log.Info("added back to the group", "leader", leader, "term", n.raft.CurrentTerm())
		return false
	}
	if g := n.groupID(); g != "" && len(conf.Servers) > 0 && !in {
		n.markRemoved(removedMark{GroupID: g, Term: n.raft.CurrentTerm(), By: "its own configuration"})
		return true
	}
	return false
}

// askIfRemoved asks the members of this node's configuration, and the
// leader they name, what the group's configuration is; a leader of the
// same group, in a term not older than this node's, whose configuration
// does not name it means that this node was removed while it was down.
func (n *Node) askIfRemoved(ctx context.Context) {
	conf, _, err := n.ownConfig()
	g := n.groupID()
	if err != nil || g == "" {
		return
	}
	mine := n.raft.CurrentTerm()
	var addrs []string
	for _, s := range conf.Servers {
		if string(s.ID) != n.ccfg.NodeID {
			addrs = append(addrs, string(s.Address))
		}
	}
	asked := map[string]bool{}
	for len(addrs) > 0 && ctx.Err() == nil {
		addr := addrs[0]
		addrs = addrs[1:]
		if asked[addr] {
			continue
		}
		asked[addr] = true
		cctx, cancel := context.WithTimeout(ctx, n.ccfg.ElectionTimeout)
		gi, err := queryGroup(cctx, n.adminCall, addr)
		cancel()
		if err != nil || gi.GroupID != g {
			continue
		}
		if gi.Leader != addr {
			if gi.Leader != "" {
				addrs = append(addrs, gi.Leader)
			}
			continue
		}
		named := slices.ContainsFunc(gi.Members, func(p Peer) bool { return p.ID == n.ccfg.NodeID })
		if !named && len(gi.Members) > 0 && gi.Status != nil && gi.Status.State == raft.Leader.String() && gi.Status.Term >= mine {
			n.markRemoved(removedMark{GroupID: g, Term: gi.Status.Term, By: "leader " + gi.NodeID + "@" + addr})
		}
		return
	}
}

// watchRemoval checks every election timeout whether this node was
// removed, or added back (see checkRemoved, askIfRemoved). A node that
// has heard from no leader over a whole interval asks the group.
func (n *Node) watchRemoval() {
	defer n.wg.Done()
	ctx, cancel := n.untilStop()
	defer cancel()
	t := time.NewTicker(n.ccfg.ElectionTimeout)
	defer t.Stop()
	leaderless := false
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if n.checkRemoved() {
			continue
		}
		addr, _ := n.raft.LeaderWithID()
		if addr != "" {
			leaderless = false
			continue
		}
		if leaderless {
			n.askIfRemoved(ctx)
		}
		leaderless = true
	}
}
