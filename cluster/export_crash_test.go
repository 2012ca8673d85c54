package cluster

import "github.com/rocketstore/rocketstore/backend"

// OnFS makes nc's node keep its store (CommitLog, ConsumeQueues, configs)
// on fsys instead of the directory: crash tests give it a crashsim.FS.
// Raft's log and snapshots stay in nc.Dir/raft.
func OnFS(nc *NodeConfig, fsys backend.FS) { nc.fsys = fsys }

// SnapshotWithoutSync is the broken variant: nc's node takes snapshots
// without syncing the CommitLog first.
func SnapshotWithoutSync(nc *NodeConfig) { nc.snapshotNoSync = true }
