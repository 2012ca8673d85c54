// Package cluster replicates a broker group — the nodes sharing one
// brokerName — over Raft (github.com/hashicorp/raft, with
// github.com/hashicorp/raft-wal as the log store).
//
// The Raft log carries the messages as the leader accepted them: the
// message with the store timestamp and store host the leader assigned. A
// committed entry is applied on every replica through the engine's normal
// put path (engineops.Ops.PutAs), so that every replica's CommitLog,
// ConsumeQueues and queue offsets are byte-identical over the committed
// prefix. The broker writes through a Writer (broker.Config.Writer): a send
// on the leader is answered only after its entry is committed by a quorum
// and applied on the leader. By then the entry is fsynced in the Raft
// logs of a majority, the leader's included, so the leader does not sync
// its CommitLog per applied batch even with SYNC_FLUSH: after a crash a
// replica applies the entries after its last snapshot again and re-puts
// what its CommitLog lost; the CommitLog is synced by the flush service
// and at every snapshot, before Raft drops the entries. Consumer offsets, delay offsets, the topic table and
// the subscription groups are replicated through the log too (a state
// entry the leader proposes when they change, every StateInterval);
// deletions are entries of their own (deletes.go). The transaction
// service writes through the log as well and is rebuilt from its queues
// when a replica starts leading (broker/transaction).
//
// With Config.LogStore LogStoreRecords the messages are not re-put: the
// leader builds each round's CommitLog records and proposes their bytes
// as a records entry, which every replica's log store (package raftlog
// over package logrecords) writes at its CommitLog offset, once; applying
// the entry makes them visible (records.go).
//
// Membership: a new node started with Config.Join asks the group's nodes
// to add it, and operators add and remove nodes, over the Raft port
// (membership.go). A stopped replica's store is repaired offline from a
// healthy replica by RepairStore (offlinerepair.go). Raft, repairs and
// membership requests share one port per node, which NewTLSTransport
// protects with mutual TLS (tls.go).
//
// The CommitLog is the state machine's state, so a snapshot is only a
// position in it (plus the small tables): taking one syncs the CommitLog,
// and the Raft log before it is compacted. A replica behind the compacted
// log, or a brand-new empty node, is caught up by InstallSnapshot, which
// streams the leader's CommitLog files; the receiver re-puts the records
// it lacks and compares the ones it has byte for byte.
//
// Group commit: the leader keeps one entry of sends in flight; the sends
// that arrive meanwhile go into the next entry together (a multi
// entry, proposer.go), each with its own result, so that a round costs
// one log write per replica whatever the number of sends it carries.
//
// Replay is idempotent: after a restart Raft re-applies the entries after
// the last snapshot, and the state machine checks each against the record
// already at its place in the CommitLog instead of writing it again (a put
// every replica refused, such as an illegal topic, is refused again).
//
// Node is the unit: it opens the broker on a store directory, the Raft
// instance beside it (DIR/raft), and reports leadership changes so that
// the server registers the leader as brokerId 0.
package cluster
