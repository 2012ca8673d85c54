package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Leadership transfer for planned maintenance: the leader brings a
// follower up to date and has it start an election at once
// (hashicorp/raft LeadershipTransfer), so that the group is without a
// leader for about one replication round instead of an election timeout,
// and the old leader is a follower when it is stopped. Sends that arrive
// during the transfer are refused as by a slave (SERVICE_NOT_AVAILABLE),
// and a client sends them again to the new leader.
//
// On the Raft port it is op 7 (membership.go's framing): the payload is
// a JSON transferRequest, an ok answer a JSON Transfer.

// opTransfer asks the leader to hand its leadership over.
const opTransfer = 7

// ErrTransferTimedOut reports a leadership transfer after which no new
// leader was known in time.
var ErrTransferTimedOut = errors.New("cluster: leadership transfer timed out")

// transferRequest names the member to hand leadership to ("": the most
// up-to-date follower, Raft's choice).
type transferRequest struct {
	To string `json:"to,omitempty"`
}

// Transfer is what a leadership transfer did: the leader before and the
// leader after, by id and Raft address.
type Transfer struct {
	From     string `json:"from"`
	FromAddr string `json:"fromAddr"`
	To       string `json:"to"`
	ToAddr   string `json:"toAddr"`
}

// TransferLeadership hands this node's leadership to member to, or to
// the follower Raft picks when to is "", and waits until this node knows
// the new leader or ctx ends. Only the leader can: on another node it
// fails with the leader's address (statusNotLeader). A target that is not
// a voting member is refused.
func (n *Node) TransferLeadership(ctx context.Context, to string) (Transfer, error) {
	if err := n.leaderOnly(); err != nil {
		return Transfer{}, err
	}
	tr := Transfer{From: n.ccfg.NodeID, FromAddr: string(n.ccfg.Transport.LocalAddr())}
	var fut raft.Future
	if to == "" {
		fut = n.raft.LeadershipTransfer()
	} else {
		s, members, err := n.member(to)
		switch {
		case err != nil:
			return tr, err
		case s == nil:
			return tr, &adminStatus{statusRefused, fmt.Sprintf("%s is not a member of the group (members: %s)", to, members)}
		case s.Suffrage != raft.Voter:
			return tr, &adminStatus{statusRefused, fmt.Sprintf("%s is not a voter of the group (%v): it cannot lead", to, s.Suffrage)}
		case to == n.ccfg.NodeID:
			return tr, &adminStatus{statusRefused, fmt.Sprintf("%s leads already", to)}
		}
		fut = n.raft.LeadershipTransferToServer(s.ID, s.Address)
	}
	// Raft bounds the transfer by its election timeout.
	if err := fut.Error(); err != nil {
		if strings.Contains(err.Error(), "timeout") {
			err = fmt.Errorf("%w: %w (the target did not catch up and win within the election timeout %v)",
				ErrTransferTimedOut, err, n.ccfg.ElectionTimeout)
		}
		return tr, fmt.Errorf("transfer leadership: %w", err)
	}
	t := time.NewTicker(n.ccfg.CommitTimeout)
	defer t.Stop()
	for {
		addr, id := n.raft.LeaderWithID()
		if id != "" && string(id) != n.ccfg.NodeID {
			tr.To, tr.ToAddr = string(id), string(addr)
			n.log.Info("leadership transferred", "to", tr.To, "asked", to)
			return tr, nil
		}
		select {
		case <-ctx.Done():
			return tr, fmt.Errorf("%w: no new leader known: %w", ErrTransferTimedOut, ctx.Err())
		case <-n.stop:
			return tr, ErrClosed
		case <-t.C:
		}
	}
}

// member returns member id of the group's configuration (nil when there
// is none) and the members' ids.
func (n *Node) member(id string) (*raft.Server, string, error) {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, "", err
	}
	var ids []string
	var found *raft.Server
	for _, s := range fut.Configuration().Servers {
		ids = append(ids, string(s.ID))
		if string(s.ID) == id {
			found = &s
		}
	}
	return found, strings.Join(ids, ", "), nil
}

// transferAnswer serves op 7.
func (n *Node) transferAnswer(payload []byte) ([]byte, error) {
	var r transferRequest
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, &adminStatus{statusRefused, fmt.Sprintf("bad transfer request %q", payload)}
	}
	// The transfer itself takes up to an election timeout, and the new
	// leader's first heartbeat follows its election.
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.ccfg.ElectionTimeout+n.ccfg.HeartbeatTimeout)
	defer cancel()
	tr, err := n.TransferLeadership(ctx, r.To)
	if err != nil {
		return nil, err
	}
	return json.Marshal(tr)
}

// TransferLeader asks the group that the node at raftAddr belongs to
// (any member: a follower points to the leader) to hand its leadership
// to member to, or to the follower Raft picks when to is "", and returns
// the leader before and after.
func (d Dialer) TransferLeader(ctx context.Context, raftAddr, to string) (Transfer, error) {
	payload, _ := json.Marshal(transferRequest{To: to})
	var tr Transfer
	body, err := callLeader(ctx, d.dial().admin, []string{raftAddr}, opTransfer, payload)
	if err != nil {
		return tr, err
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return tr, fmt.Errorf("cluster: transfer answer: %w", err)
	}
	return tr, nil
}
