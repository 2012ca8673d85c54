package cluster

// NoWithdraw is the broken variant: nc's node keeps a send queued after
// its context ends.
func NoWithdraw(nc *NodeConfig) { nc.noWithdraw = true }
