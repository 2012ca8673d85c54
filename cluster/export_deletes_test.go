package cluster

// LockState holds n's state-entry lock, as the leader does from
// capturing its tables for a state entry until it is enqueued; the
// returned function releases it.
func LockState(n *Node) (unlock func()) {
	n.stateMu.Lock()
	return n.stateMu.Unlock
}

// StateEntry is the state entry that n's replicateState would propose
// now: its tables, from n.
func StateEntry(n *Node) []byte {
	data, err := n.stateEntry()
	if err != nil {
		panic(err)
	}
	return data
}

// UnorderedDeletes is the broken variant: a deletion is proposed without
// waiting for a state entry being captured.
func UnorderedDeletes(nc *NodeConfig) { nc.noDeleteOrder = true }

// StaleStateTerm is the broken variant: replicas apply a state entry
// whatever term it was committed in.
func StaleStateTerm(nc *NodeConfig) { nc.noStateTerm = true }

// UnorderedRecordsDeletes is the broken variant: on a store of replicated
// records a topic deletion is proposed and applied while rounds of sends
// are built (without the proposer's lock).
func UnorderedRecordsDeletes(nc *NodeConfig) { nc.noRecordsDeleteOrder = true }
