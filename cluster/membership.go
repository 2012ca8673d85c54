package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Membership changes of a running group.
//
// A new, empty node is started with Cluster.Join and Cluster.Peers
// naming (some of) the group's nodes. It asks them, over the repair
// protocol's port (the Raft port), to be added (opJoin), every
// ElectionTimeout until it is a member: a follower answers with the
// leader's address, the leader checks the node against the group — the
// same brokerName, the same CommitLog file size, no other group's
// identity in its store, an id and address not taken — and adds it as a
// voter (hashicorp/raft AddVoter). The leader then catches it up from its
// Raft log or, past the compacted log, by InstallSnapshot (its CommitLog
// files). A node refused stops with the leader's reason (Node.Err). None
// of the other nodes' peer lists change: the peer list in the config is
// the group's first membership, the Raft configuration its current one.
//
// An operator does the same, and removes a node, with AddNode and
// RemoveNode against any node's Raft address (`rocketstore admin cluster
// add-node|remove-node|members`); for an operator's request the leader
// asks the new node itself what its store is (op 6) and checks that.
// These requests share the Raft port and its authentication: with TLS
// (tls.go), only holders of a certificate of the group's CA are
// answered; without, the port must be reachable by the members only.
//
// Requests on the Raft port (repair.go's framing):
//
//	request:  0xF0 | OP uint8 | 0 int64 | LENGTH int32 | LENGTH bytes of JSON
//	response: STATUS uint8 | LENGTH uint32 | LENGTH bytes
//
// where STATUS is 0 (ok; op 6's body is JSON GroupInfo), 1 (failed, a
// text), 2 (not the leader; the body is the leader's Raft address, empty
// when unknown) or 3 (refused for good, a text). Op 7, a leadership
// transfer, is in transfer.go.
const (
	opJoin   = 4
	opRemove = 5
	opInfo   = 6
)

// Response statuses.
const (
	statusOK        = 0
	statusFailed    = 1
	statusNotLeader = 2
	statusRefused   = 3
)

// maxAdminPayload bounds a membership request.
const maxAdminPayload = 64 << 10

// ErrRefused reports a node the group's leader refuses to add.
var ErrRefused = errors.New("cluster: refused by the group")

// joinRequest is what a node asks to be added with.
type joinRequest struct {
	ID                string `json:"id"`
	Addr              string `json:"addr"`
	BrokerName        string `json:"brokerName,omitempty"`
	CommitLogFileSize int64  `json:"commitLogFileSize,omitempty"`
	// GroupID is the group identity in the node's store ("" for an
	// empty store).
	GroupID string `json:"groupId,omitempty"`
	// Operator is set by AddNode: the node's store is not known.
	Operator bool `json:"operator,omitempty"`
}

// GroupInfo is what a node tells of its group (op 6).
type GroupInfo struct {
	NodeID            string `json:"nodeId"`
	GroupID           string `json:"groupId"`
	BrokerName        string `json:"brokerName"`
	CommitLogFileSize int64  `json:"commitLogFileSize"`
	// MinOffset and Applied are the CommitLog range the node holds and
	// has applied (the committed prefix it serves repairs from).
	MinOffset int64  `json:"minOffset"`
	Applied   int64  `json:"applied"`
	Leader    string `json:"leader"`
	// Members is the current Raft configuration.
	Members []Peer `json:"members"`
	// Status is the node's Raft state (absent from older nodes).
	Status *Status `json:"status,omitempty"`
}

// adminFunc sends one membership request and returns the status and body.
type adminFunc func(ctx context.Context, addr string, op byte, payload []byte) (byte, []byte, error)

// adminStatus is an answer that is not ok.
type adminStatus struct {
	status byte
	text   string
}

func (e *adminStatus) Error() string { return e.text }

// adminAnswer answers a membership request.
func (n *Node) adminAnswer(op byte, payload []byte) (byte, []byte) {
	out, err := n.admin(op, payload)
	if err == nil {
		return statusOK, out
	}
	var st *adminStatus
	if errors.As(err, &st) {
		return st.status, []byte(st.text)
	}
	return statusFailed, []byte(err.Error())
}

func (n *Node) admin(op byte, payload []byte) ([]byte, error) {
	switch op {
	case opInfo:
		return json.Marshal(n.Info())
	case opJoin:
		var r joinRequest
		if err := json.Unmarshal(payload, &r); err != nil || r.ID == "" || r.Addr == "" {
			return nil, &adminStatus{statusRefused, fmt.Sprintf("bad join request %q", payload)}
		}
		return nil, n.join(r)
	case opRemove:
		var r joinRequest
		if err := json.Unmarshal(payload, &r); err != nil || r.ID == "" {
			return nil, &adminStatus{statusRefused, fmt.Sprintf("bad remove request %q", payload)}
		}
		if err := n.leaderOnly(); err != nil {
			return nil, err
		}
		return nil, n.RemoveServer(r.ID)
	case opTransfer:
		return n.transferAnswer(payload)
	}
	return nil, fmt.Errorf("unknown op %d", op)
}

// leaderOnly answers statusNotLeader on a node that does not lead.
func (n *Node) leaderOnly() error {
	if n.Writable() {
		return nil
	}
	addr, _ := n.raft.LeaderWithID()
	return &adminStatus{statusNotLeader, string(addr)}
}

// join checks a node asking to join against the group and adds it.
func (n *Node) join(r joinRequest) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		err := &adminStatus{statusRefused, fmt.Sprintf("node %s@%s: ", r.ID, r.Addr) + fmt.Sprintf(format, args...)}
		n.log.Warn("node refused", "err", err)
		return err
	}
	n.fsm.mu.Lock()
	g := n.fsm.group
	n.fsm.mu.Unlock()
	if g == nil {
		return errors.New("the group's identity is not committed yet")
	}
	if _, _, err := net.SplitHostPort(r.Addr); err != nil {
		return refuse("address: %v", err)
	}
	if r.Operator {
		// The operator names the node; it tells what its store is.
		if err := n.askNodeInfo(&r); err != nil {
			return err
		}
	}
	switch {
	case r.CommitLogFileSize != g.CommitLogFileSize:
		return refuse("CommitLog file size %d, the group's is %d (mapedFileSizeCommitLog must be equal on every node)",
			r.CommitLogFileSize, g.CommitLogFileSize)
	case r.BrokerName != g.BrokerName:
		return refuse("brokerName %q, the group's is %q", r.BrokerName, g.BrokerName)
	case r.GroupID != "" && r.GroupID != g.GroupID:
		return refuse("its store directory belongs to broker group %s, this group is %s (a foreign store directory)",
			r.GroupID, g.GroupID)
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	for _, s := range fut.Configuration().Servers {
		switch {
		case string(s.ID) == r.ID && string(s.Address) == r.Addr:
			return nil // a member already: asked again
		case string(s.ID) == r.ID:
			return refuse("id %s is a member at %s (remove it first)", s.ID, s.Address)
		case string(s.Address) == r.Addr:
			return refuse("address %s is member %s's", s.Address, s.ID)
		}
	}
	// A store holds the group's identity only once its node was a member
	// (the identity comes through the group's log), so a non-member
	// asking with it was removed: it stays out until its store is wiped
	// or an operator adds it back. Not refused for good: the node keeps
	// asking, so that an operator's add-node lets it in without a restart.
	if r.GroupID == g.GroupID && !r.Operator {
		err := fmt.Errorf("node %s@%s was removed from the group: it joins again only with an empty store "+
			"directory, or once an operator adds it back (rocketstore admin cluster add-node)", r.ID, r.Addr)
		n.log.Warn("node refused", "err", err)
		return err
	}
	if err := n.AddVoter(r.ID, r.Addr); err != nil {
		return fmt.Errorf("add %s@%s: %w", r.ID, r.Addr, err)
	}
	n.log.Info("node added to the group", "node", r.ID, "addr", r.Addr)
	return nil
}

// askNodeInfo fills an operator's request with what the node itself
// says of its store (op 6 on its Raft address).
func (n *Node) askNodeInfo(r *joinRequest) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.ccfg.ApplyTimeout)
	defer cancel()
	st, body, err := n.adminCall(ctx, r.Addr, opInfo, nil)
	if err == nil && st != statusOK {
		err = errors.New(string(body))
	}
	var gi GroupInfo
	if err == nil {
		err = json.Unmarshal(body, &gi)
	}
	if err != nil {
		return fmt.Errorf("node %s@%s is not reachable (start it first, on an empty directory with raft.join): %w", r.ID, r.Addr, err)
	}
	if gi.NodeID != r.ID {
		return &adminStatus{statusRefused, fmt.Sprintf("the node at %s is %q, not %q", r.Addr, gi.NodeID, r.ID)}
	}
	r.BrokerName, r.CommitLogFileSize, r.GroupID = gi.BrokerName, gi.CommitLogFileSize, gi.GroupID
	return nil
}

// RemoveServer removes a node from the group; only the leader can. The
// removed node stops receiving the log and stays removed: restarted with
// Join and its store, it is not let in until its directory is wiped or an
// operator adds it back (AddNode).
func (n *Node) RemoveServer(id string) error {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) == id {
			if err := n.raft.RemoveServer(s.ID, 0, n.ccfg.ApplyTimeout).Error(); err != nil {
				return fmt.Errorf("remove %s: %w", id, err)
			}
			n.log.Info("node removed from the group", "node", id)
			return nil
		}
	}
	return &adminStatus{statusRefused, fmt.Sprintf("%s is not a member of the group", id)}
}

// Info returns what this node knows of its group.
func (n *Node) Info() GroupInfo {
	n.fsm.mu.Lock()
	gi := GroupInfo{NodeID: n.ccfg.NodeID, Applied: n.fsm.cursor, CommitLogFileSize: n.fsm.store.CommitLog().FileSize(),
		MinOffset: n.fsm.store.CommitLog().MinOffset(), BrokerName: n.cfg.BrokerName}
	if g := n.fsm.group; g != nil {
		gi.GroupID = g.GroupID
	}
	n.fsm.mu.Unlock()
	addr, _ := n.raft.LeaderWithID()
	gi.Leader = string(addr)
	st := n.Status()
	gi.Status = &st
	if fut := n.raft.GetConfiguration(); fut.Error() == nil {
		for _, s := range fut.Configuration().Servers {
			gi.Members = append(gi.Members, Peer{ID: string(s.ID), Addr: string(s.Address)})
		}
	}
	return gi
}

// isMember reports whether this node is in the group's configuration.
func (n *Node) isMember() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) == n.ccfg.NodeID {
			return true
		}
	}
	return false
}

// askToJoin runs on a node started with Join that is not a member: it
// asks the configured peers to add it until one (the leader) has, or the
// leader refuses it.
func (n *Node) askToJoin() {
	defer n.wg.Done()
	ctx, cancel := n.untilStop()
	defer cancel()
	n.fsm.mu.Lock()
	r := joinRequest{ID: n.ccfg.NodeID, Addr: string(n.ccfg.Transport.LocalAddr()), BrokerName: n.cfg.BrokerName,
		CommitLogFileSize: n.fsm.store.CommitLog().FileSize()}
	if g := n.fsm.group; g != nil {
		r.GroupID = g.GroupID
	}
	n.fsm.mu.Unlock()
	payload, _ := json.Marshal(r)
	for attempt := 0; ; attempt++ {
		if n.removed.Load() != nil {
			return // logged by markRemoved; an operator's add-node needs no request
		}
		if attempt > 0 {
			select {
			case <-n.stop:
				return
			case <-time.After(n.ccfg.ElectionTimeout):
			}
		}
		if n.isMember() {
			return
		}
		_, err := callLeader(ctx, n.adminCall, n.otherPeers(), opJoin, payload)
		if err == nil {
			n.log.Info("added to the group")
			n.settleBrokerID()
			return
		}
		if errors.Is(err, ErrRefused) {
			_ = n.fsm.fail(fmt.Errorf("%w: join: %w", ErrDiverged, err)) // logged; the replica stops applying
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt%10 == 0 {
			n.log.Warn("asking to join the group", "attempt", attempt+1, "err", err)
		}
	}
}

// settleBrokerID waits until this node sees itself in the group's
// configuration and then has its follower broker id recomputed (by the
// leadership watcher, which alone reports role changes).
func (n *Node) settleBrokerID() {
	for !n.isMember() {
		select {
		case <-n.stop:
			return
		case <-time.After(n.ccfg.CommitTimeout):
		}
	}
	if !n.writable.Load() {
		select {
		case n.notify <- false:
		default:
		}
	}
}

// callLeader sends a request to the first of addrs that answers,
// following a follower's answer to the leader, and returns the answer.
func callLeader(ctx context.Context, call adminFunc, addrs []string, op byte, payload []byte) ([]byte, error) {
	var errs []error
	tried := map[string]bool{}
	for len(addrs) > 0 {
		addr := addrs[0]
		addrs = addrs[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		st, body, err := call(ctx, addr, op, payload)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		case st == statusOK:
			return body, nil
		case st == statusNotLeader && len(body) > 0:
			addrs = append([]string{string(body)}, addrs...)
		case st == statusNotLeader:
			errs = append(errs, fmt.Errorf("%s: not the leader, and knows of none", addr))
		case st == statusRefused:
			return nil, fmt.Errorf("%w: %s", ErrRefused, body)
		default:
			errs = append(errs, fmt.Errorf("%s: %s", addr, body))
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("cluster: no node to ask")
	}
	return nil, errors.Join(errs...)
}

func addNode(ctx context.Context, call adminFunc, raftAddr, id, addr string) error {
	payload, _ := json.Marshal(joinRequest{ID: id, Addr: addr, Operator: true})
	_, err := callLeader(ctx, call, []string{raftAddr}, opJoin, payload)
	return err
}

func removeNode(ctx context.Context, call adminFunc, raftAddr, id string) error {
	payload, _ := json.Marshal(joinRequest{ID: id})
	_, err := callLeader(ctx, call, []string{raftAddr}, opRemove, payload)
	return err
}

func queryGroup(ctx context.Context, call adminFunc, raftAddr string) (GroupInfo, error) {
	var gi GroupInfo
	st, body, err := call(ctx, raftAddr, opInfo, nil)
	if err != nil {
		return gi, err
	}
	if st != statusOK {
		return gi, fmt.Errorf("cluster: %s: %s", raftAddr, body)
	}
	if err := json.Unmarshal(body, &gi); err != nil {
		return gi, fmt.Errorf("cluster: %s: group info: %w", raftAddr, err)
	}
	return gi, nil
}

// adminTCP sends one membership request over plain TCP.
func adminTCP(ctx context.Context, addr string, op byte, payload []byte) (byte, []byte, error) {
	return dialer(net.Dialer{}, nil).admin(ctx, addr, op, payload)
}

// admin sends one membership request to the Raft port at addr.
func (dial dialFunc) admin(ctx context.Context, addr string, op byte, payload []byte) (byte, []byte, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(time.Minute))
	}
	req := []byte{repairMagic, op}
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(len(payload)))
	if _, err := c.Write(append(req, payload...)); err != nil {
		return 0, nil, err
	}
	var h [5]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return 0, nil, err
	}
	l := binary.BigEndian.Uint32(h[1:])
	if l > maxRepairRead {
		return 0, nil, fmt.Errorf("answer of %d bytes", l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(c, b); err != nil {
		return 0, nil, err
	}
	return h[0], b, nil
}

// isAdminOp reports the ops whose request carries a payload.
func isAdminOp(op byte) bool {
	return op == opJoin || op == opRemove || op == opInfo || op == opTransfer
}

// serveAdmin reads a membership request's payload and answers it.
func (n *Node) serveAdmin(c net.Conn, br *bufio.Reader, op byte, size int64) error {
	if size < 0 || size > maxAdminPayload {
		return fmt.Errorf("payload of %d bytes", size)
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(br, payload); err != nil {
		return err
	}
	st, body := n.adminAnswer(op, payload)
	resp := append([]byte{st}, binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
	_, err := c.Write(append(resp, body...))
	return err
}

// initialMember reports whether id is in the group's first peer list
// (its identity). Members added later need not be in any node's
// raft.peers, and a first member that was removed is not added back from
// them.
func (n *Node) initialMember(id string) bool {
	n.fsm.mu.Lock()
	g := n.fsm.group
	n.fsm.mu.Unlock()
	if g == nil {
		return true
	}
	for _, p := range g.Peers {
		if q, err := ParsePeer(p); err == nil && q.ID == id {
			return true
		}
	}
	return false
}

// joinedFollowerID is the broker id of a follower that joined the group
// (not in its own peer list): its place in the group's configuration,
// where the first members come first in their order and the nodes that
// joined follow in the order they were added, so that it differs from
// every other member's.
func (n *Node) joinedFollowerID() int64 {
	fut := n.raft.GetConfiguration()
	if fut.Error() == nil {
		for i, s := range fut.Configuration().Servers {
			if string(s.ID) == n.ccfg.NodeID {
				return int64(i + 1)
			}
		}
	}
	return int64(len(n.ccfg.Peers) + 1)
}
