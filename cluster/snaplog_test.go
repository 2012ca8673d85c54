package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/cluster"
)

// answerLoser is an in-memory transport that loses the answer to the
// first AppendEntries carrying entries to a follower after it installed
// a snapshot this node sent: the follower stores the entries, this node
// sees an error, as when the answer comes after the transport's timeout
// on a loaded machine.
type answerLoser struct {
	*raft.InmemTransport
	mu        sync.Mutex
	installed map[raft.ServerID]bool
	lost      atomic.Int64
}

func (a *answerLoser) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, req *raft.InstallSnapshotRequest,
	resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := a.InmemTransport.InstallSnapshot(id, target, req, resp, data)
	if err == nil && resp.Success {
		a.mu.Lock()
		a.installed[id] = true
		a.mu.Unlock()
	}
	return err
}

func (a *answerLoser) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest,
	resp *raft.AppendEntriesResponse) error {
	err := a.InmemTransport.AppendEntries(id, target, req, resp)
	if err != nil || len(req.Entries) == 0 || !resp.Success {
		return err
	}
	a.mu.Lock()
	lose := a.installed[id]
	delete(a.installed, id)
	a.mu.Unlock()
	if lose {
		a.lost.Add(1)
		return errors.New("answer lost")
	}
	return nil
}

// TestAnswerLostAfterInstall: a follower installs the leader's snapshot
// and stores the entries after it, but the leader does not get the
// answer and sends them again after the snapshot's last entry, which the
// follower's log does not hold (the install emptied it). The follower
// takes them all the same (the snapshot stands for that entry) and
// catches up, on each log store; it used to refuse them, be sent the
// snapshot again, and stay at the snapshot's offset for good.
func TestAnswerLostAfterInstall(t *testing.T) {
	t.Parallel()
	for _, store := range allLogStores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var losers []*answerLoser
			g := newGroupWith(t, 3, &group{
				tune: func(nc *cluster.NodeConfig) {
					compact(nc)
					nc.Cluster.LogStore = store
				},
				wrap: func(_ int, tr *raft.InmemTransport) raft.Transport {
					l := &answerLoser{InmemTransport: tr, installed: map[raft.ServerID]bool{}}
					losers = append(losers, l)
					return l
				},
			})
			for i := range 20 {
				g.send("T", int32(i%4), fmt.Sprint("a", i), "")
			}
			g.converge()
			f := (g.leader() + 1) % 3
			g.stop(f)
			for i := range 100 {
				g.send("T", int32(i%4), fmt.Sprint("b", i), "")
			}
			if err := g.nodes[g.leader()].Snapshot(); err != nil {
				t.Fatal(err)
			}
			g.start(f)
			waitSnapshotInstalled(t, g.nodes[f], g.peers[f].ID)
			for i := range 20 {
				g.send("T", int32(i%4), fmt.Sprint("c", i), "")
			}
			g.converge()
			var lost int64
			for _, l := range losers {
				lost += l.lost.Load()
			}
			if lost == 0 {
				t.Fatal("no answer after an install was lost: the test cannot tell")
			}
		})
	}
}
