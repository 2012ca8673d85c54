package cluster

import "github.com/rocketstore/rocketstore/backend"

// OnFS makes nc's node keep its store (CommitLog, ConsumeQueues, configs)
// on fsys instead of the directory: crash tests give it a crashsim.FS.
// Raft's snapshots stay in nc.Dir/raft, and so does its log on raft-wal;
// the raftlog store keeps its frames on fsys and its term and vote in
// nc.Dir/raft/log.
func OnFS(nc *NodeConfig, fsys backend.FS) { nc.fsys = fsys }

// SnapshotWithoutSync is the broken variant: nc's node takes snapshots
// without syncing the CommitLog first.
func SnapshotWithoutSync(nc *NodeConfig) { nc.snapshotNoSync = true }

// ReinstallDropsTail is the broken variant of the store of records
// entries: a received snapshot's install finished at start truncates the
// records past the snapshot, as Raft's install does, though they are the
// records of the log's entries after it.
func ReinstallDropsTail(nc *NodeConfig) { nc.reinstallDropsTail = true }

// OnInstall makes nc's node call f as a received snapshot's install on a
// store of replicated records begins.
func OnInstall(nc *NodeConfig, f func()) { nc.onInstall = f }

// KeepLogBeforeSnapshot is the broken variant: nc's node keeps, at
// start, a log that ends before its newest snapshot, which Raft would
// have emptied after installing it.
func KeepLogBeforeSnapshot(nc *NodeConfig) { nc.keepLogBeforeSnapshot = true }
