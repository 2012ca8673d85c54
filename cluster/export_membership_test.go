package cluster

import "context"

// AdminVia makes nc's node send its membership requests to the node that
// nodeAt returns for a peer's Raft address (nil: down), in memory,
// instead of over TCP: for groups on in-memory transports.
func AdminVia(nc *NodeConfig, nodeAt func(addr string) *Node) {
	nc.askAdmin = func(ctx context.Context, addr string, op byte, payload []byte) (byte, []byte, error) {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		n := nodeAt(addr)
		if n == nil {
			return 0, nil, errNodeDown(addr)
		}
		st, body := n.adminAnswer(op, payload)
		return st, body, nil
	}
}

// NoTransactionRebuild is a broken variant: a node that leads again
// keeps the transaction state it had.
func NoTransactionRebuild(nc *NodeConfig) { nc.noTxnRebuild = true }

// NoInstallDeletes is a broken variant: a snapshot install does not
// delete the topics the leader deleted.
func NoInstallDeletes(nc *NodeConfig) { nc.noInstallDeletes = true }
