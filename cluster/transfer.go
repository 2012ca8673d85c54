package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/raft"
)

// Leadership transfer for planned maintenance: the leader brings a
// follower up to date and has it start an election at once
// (hashicorp/raft LeadershipTransfer), so that the group has no leader
// for about one replication round instead of an election timeout, and
// the old leader is a follower when it is stopped.

// opTransfer asks the leader to hand leadership over (payload: JSON
// transferRequest).
const opTransfer = 7

// transferRequest names the node to hand leadership to ("": the most
// up-to-date follower, Raft's choice).
type transferRequest struct {
	To string `json:"to,omitempty"`
}

// TransferLeadership hands this node's leadership to member to, or to
// the follower Raft picks when to is "". Only the leader can; it returns
// once the transfer succeeded or failed (Raft bounds it by the election
// timeout).
func (n *Node) TransferLeadership(to string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	var fut raft.Future
	if to == "" {
		fut = n.raft.LeadershipTransfer()
	} else {
		addr, ok := n.memberAddr(to)
		switch {
		case !ok:
			return &adminStatus{statusRefused, fmt.Sprintf("%s is not a member of the group", to)}
		case to == n.ccfg.NodeID:
			return &adminStatus{statusRefused, fmt.Sprintf("%s leads already", to)}
		}
		fut = n.raft.LeadershipTransferToServer(raft.ServerID(to), addr)
	}
	if err := fut.Error(); err != nil {
		return fmt.Errorf("transfer leadership: %w", err)
	}
	n.log.Info("leadership transferred", "to", to)
	return nil
}

// memberAddr returns member id's Raft address.
func (n *Node) memberAddr(id string) (raft.ServerAddress, bool) {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return "", false
	}
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) == id {
			return s.Address, true
		}
	}
	return "", false
}

func (n *Node) transferAnswer(payload []byte) error {
	var r transferRequest
	if err := json.Unmarshal(payload, &r); err != nil {
		return &adminStatus{statusRefused, fmt.Sprintf("bad transfer request %q", payload)}
	}
	return n.TransferLeadership(r.To)
}

// TransferLeader asks the group that the node at raftAddr belongs to
// (any member: a follower points to the leader) to hand leadership to
// member to, or to the follower Raft picks when to is "".
func (d Dialer) TransferLeader(ctx context.Context, raftAddr, to string) error {
	payload, _ := json.Marshal(transferRequest{To: to})
	return callLeader(ctx, d.dial().admin, []string{raftAddr}, opTransfer, payload)
}
