package cluster

import "github.com/hashicorp/raft"

// observeElections counts this node's elections from Raft's state
// changes: every change to Candidate starts one, every change to Leader
// won one. Raft calls an observer's filter in its own goroutine for each
// observation, in order; this one counts there and passes nothing on (no
// channel), so that no count is lost to a full channel and no goroutine
// is needed. Registered right after NewRaft, it sees the first election:
// a follower waits at least a heartbeat timeout before it stands.
func (n *Node) observeElections() {
	n.raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		switch d := o.Data.(type) {
		case raft.RaftState:
			switch d {
			case raft.Candidate:
				n.counters.electionsStarted.Add(1)
			case raft.Leader:
				n.counters.electionsWon.Add(1)
				n.followers.reset()
			}
		case raft.PeerObservation:
			if d.Removed {
				n.followers.forget(d.Peer.ID)
			}
		}
		return false
	}))
}
