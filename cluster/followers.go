package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// FollowerStatus is the leader's view of one follower: how much of the
// leader's log the follower holds, from the AppendEntries answers of the
// leader's current term.
type FollowerStatus struct {
	ID string `json:"nodeId"`
	// MatchIndex is the newest entry the follower confirmed to hold (0
	// until it confirms one in this term).
	MatchIndex uint64 `json:"matchIndex"`
	// LagEntries is the leader's last log index minus MatchIndex: entries
	// the follower has yet to store (in flight ones included).
	LagEntries uint64 `json:"lagEntries"`
	// LastContactMs is how long ago the follower last answered the
	// leader (-1 when it has not in this term).
	LastContactMs int64 `json:"lastContactMs"`
}

// followerTracker keeps the leader's view of its followers. Raft keeps
// the same (its match indexes) but does not export it, so the tracker
// reads the AppendEntries answers as they pass through the transport
// (trackedTransport).
type followerTracker struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		peers map[raft.ServerID]*followerProgress
	}
}

// followerProgress is one follower's, in term.
type followerProgress struct {
	term, match uint64
	contact     time.Time
}

func newFollowerTracker(now func() time.Time) *followerTracker {
	t := &followerTracker{now: now}
	t.mu.peers = map[raft.ServerID]*followerProgress{}
	return t
}

// observe records the answer resp of follower id to req.
func (t *followerTracker) observe(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if resp.Term > req.Term {
		return // this node is a stale leader: the answer says nothing of its term
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.mu.peers[id]
	if p == nil || p.term != req.Term {
		// Match indexes start over with every term, as Raft's do.
		p = &followerProgress{term: req.Term}
		t.mu.peers[id] = p
	}
	p.contact = t.now()
	if !resp.Success {
		return
	}
	// A success confirms the follower's log matches the leader's up to
	// the request's last entry, or its previous entry when it carries
	// none (a heartbeat carries neither: PrevLogEntry 0).
	last := req.PrevLogEntry
	if k := len(req.Entries); k > 0 {
		last = req.Entries[k-1].Index
	}
	p.match = max(p.match, last)
}

// reset forgets every follower's progress (a new term of leadership).
func (t *followerTracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.mu.peers)
}

// forget drops a follower removed from the group.
func (t *followerTracker) forget(id raft.ServerID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mu.peers, id)
}

// view returns the leader's view of followers ids, in term, whose last
// log index is lastIndex.
func (t *followerTracker) view(ids []raft.ServerID, term, lastIndex uint64) []FollowerStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	out := make([]FollowerStatus, 0, len(ids))
	for _, id := range ids {
		f := FollowerStatus{ID: string(id), LagEntries: lastIndex, LastContactMs: -1}
		if p := t.mu.peers[id]; p != nil && p.term == term {
			f.MatchIndex, f.LagEntries = p.match, lastIndex-min(lastIndex, p.match)
			f.LastContactMs = now.Sub(p.contact).Milliseconds()
		}
		out = append(out, f)
	}
	return out
}

// trackedTransport is a Raft transport whose AppendEntries answers feed
// a followerTracker. It passes the optional interfaces Raft looks for
// (pre-vote, close) through, so it is made only over a transport with
// both (see trackFollowers).
type trackedTransport struct {
	fullTransport
	t *followerTracker
}

// fullTransport is a transport with pre-vote and close, as Raft's TCP
// and in-memory transports are.
type fullTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// trackFollowers returns trans reporting to t; a transport without
// pre-vote or close is returned as it is (Raft would treat the wrapper
// as having them), and the leader then reports no followers' progress.
func trackFollowers(trans raft.Transport, t *followerTracker) raft.Transport {
	if ft, ok := trans.(fullTransport); ok {
		return &trackedTransport{fullTransport: ft, t: t}
	}
	return trans
}

// AppendEntries sends req to follower id and records its answer.
func (tt *trackedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest,
	resp *raft.AppendEntriesResponse) error {
	err := tt.fullTransport.AppendEntries(id, target, req, resp)
	if err == nil {
		tt.t.observe(id, req, resp)
	}
	return err
}

// AppendEntriesPipeline refuses: Raft then replicates with one
// AppendEntries in flight per follower (see noPipeline).
func (tt *trackedTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, noPipeline()
}

// noPipeline is the answer of the node's transports to a pipelined
// replication: hashicorp/raft v1.8's pipeline can deadlock when a
// follower answers Success=false (a new leader's higher term, after a
// leadership transfer or an election): its decoder returns, the
// transport's response reader blocks handing on the answer that nobody
// reads, the next send blocks behind it, and the replication goroutine
// never returns, so that the old leader's Shutdown never returns either.
// Without the pipeline, each AppendEntries is answered before the next
// is sent; a round of sends is one entry (proposer.go), so the pipeline
// would only overlap rounds.
func noPipeline() error { return raft.ErrPipelineReplicationNotSupported }
