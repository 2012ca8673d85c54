package cluster

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Status is a node's Raft and replication state as operators watch it
// (metrics, `admin cluster members`). It is read, never acted on.
type Status struct {
	// State is Raft's: Leader, Follower, Candidate or Shutdown.
	State string `json:"state"`
	// Term is the current Raft term; it grows by one for every election
	// held in the group.
	Term uint64 `json:"term"`
	// LastLogIndex is the newest entry in this node's Raft log,
	// CommitIndex the newest it knows committed, AppliedIndex the newest
	// applied to its store, LastSnapshotIndex the newest snapshot's.
	LastLogIndex      uint64 `json:"lastLogIndex"`
	CommitIndex       uint64 `json:"commitIndex"`
	AppliedIndex      uint64 `json:"appliedIndex"`
	LastSnapshotIndex uint64 `json:"lastSnapshotIndex"`
	// LastContactMs is how long ago a follower last heard from the
	// leader (0 on the leader; -1 when it never did).
	LastContactMs int64 `json:"lastContactMs"`
	// AppliedOffset is the CommitLog offset up to which the node applied
	// the log (its committed prefix).
	AppliedOffset int64 `json:"appliedOffset"`
	// ElectionsStarted counts the times this node became a candidate
	// since it started (a candidate whose election times out stands
	// again without becoming one anew, and is not counted again), and
	// ElectionsWon the times it became the leader. SnapshotInstalls
	// counts the leader's snapshots it installed.
	ElectionsStarted int64 `json:"electionsStarted"`
	ElectionsWon     int64 `json:"electionsWon"`
	SnapshotInstalls int64 `json:"snapshotInstalls"`
	// Repaired counts the CommitLog records rewritten from a replica (at
	// start and by the scrub); ScrubRuns counts the background scrub's
	// runs (one every ScrubInterval) and ScrubbedBytes the bytes they
	// compared with the other replicas.
	Repaired      int64 `json:"repaired"`
	ScrubRuns     int64 `json:"scrubRuns"`
	ScrubbedBytes int64 `json:"scrubbedBytes"`
	// Followers is, on the leader, its view of every other member (nil
	// on a follower, and on a leader whose transport is not tracked).
	Followers []FollowerStatus `json:"followers,omitempty"`
}

// statusCounters are the counters of Status the node keeps itself (Raft
// keeps the rest).
type statusCounters struct {
	electionsStarted, electionsWon, scrubRuns, scrubbedBytes atomic.Int64
}

// Status returns the node's state now.
func (n *Node) Status() Status {
	st := n.raft.Stats()
	u := func(k string) uint64 { v, _ := strconv.ParseUint(st[k], 10, 64); return v }
	state := n.raft.State()
	s := Status{
		State:             state.String(),
		Term:              u("term"),
		LastLogIndex:      u("last_log_index"),
		CommitIndex:       u("commit_index"),
		AppliedIndex:      u("applied_index"),
		LastSnapshotIndex: u("last_snapshot_index"),
		LastContactMs:     lastContactMs(state, st["last_contact"]),
		AppliedOffset:     n.AppliedOffset(),
		ElectionsStarted:  n.counters.electionsStarted.Load(),
		ElectionsWon:      n.counters.electionsWon.Load(),
		SnapshotInstalls:  n.fsm.installs.Load(),
		Repaired:          n.Repaired(),
		ScrubRuns:         n.counters.scrubRuns.Load(),
		ScrubbedBytes:     n.counters.scrubbedBytes.Load(),
	}
	if state == raft.Leader && n.tracked {
		s.Followers = n.followers.view(n.otherMembers(), s.Term, s.LastLogIndex)
	}
	return s
}

// otherMembers are the group's members but this node (none when the
// configuration cannot be read: Raft is shutting down).
func (n *Node) otherMembers() []raft.ServerID {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	var ids []raft.ServerID
	for _, m := range fut.Configuration().Servers {
		if m.ID != raft.ServerID(n.ccfg.NodeID) {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// lastContactMs reads Raft's last_contact stat: "never", "0" on the
// leader, else the time since as a Go duration.
func lastContactMs(state raft.RaftState, v string) int64 {
	if state == raft.Leader {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return -1 // "never"
	}
	return d.Milliseconds()
}
