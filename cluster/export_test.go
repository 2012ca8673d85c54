package cluster

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// AskPeerVia makes nc's node send its repair requests to the node that
// nodeAt returns for a peer's Raft address (nil: down), in memory,
// instead of over TCP: for groups on in-memory transports.
func AskPeerVia(nc *NodeConfig, nodeAt func(addr string) *Node) {
	nc.askPeer = func(ctx context.Context, addr string, op byte, off, size int64) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := nodeAt(addr)
		if n == nil {
			return nil, errNodeDown(addr)
		}
		return n.repairAnswer(op, off, size)
	}
}

type errNodeDown string

func (e errNodeDown) Error() string { return "replica " + string(e) + " is down" }

// ApplyOverDamage is the broken variant: nc's node applies the log while
// the damage its recovery found is not repaired.
func ApplyOverDamage(nc *NodeConfig) { nc.applyOverDamage = true }

// RaftLogInfo makes nc's node log Raft's own lines from Info up (its
// campaigns), as ROCKETSTORE_RAFT_LOG=info does for a whole process.
func RaftLogInfo(nc *NodeConfig) { nc.raftLog = hclog.Info }

// WholeLogDirSource is the broken variant of DirSource: the stopped
// replica's whole CommitLog is served as committed, on the store of
// records entries too.
func WholeLogDirSource(dir string) (RepairSource, error) { return openDirSource(dir, true) }
