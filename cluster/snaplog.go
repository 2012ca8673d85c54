package cluster

import (
	"errors"

	"github.com/hashicorp/raft"
)

// snapshotLog is the node's Raft log store: raft-wal or raftlog, whose
// entry at the newest snapshot's index, once compacted away or never
// stored (the snapshot was installed from the leader), reads as an entry
// of the snapshot's term.
//
// Raft (hashicorp/raft v1.8) checks an AppendEntries' previous entry
// against the follower's last one (the snapshot's while the log holds
// nothing newer) or else reads it from the log store, never from the
// snapshot. After an install both stores are empty (they are monotonic:
// Raft removes every entry), so a follower that installed a snapshot at
// S and then stored entries S+1.. has no entry S. Should the leader not
// get the answer to those entries (a timeout on a loaded machine, a lost
// connection), it sends them again after S, and the follower refuses
// them: it does not find S. The leader walks back to its compacted log,
// sends the snapshot again, the follower installs it, empties its log
// again while Raft still counts the entries it had, and refuses S again:
// the follower stays at the snapshot for good, installing it over and
// over. The snapshot covers S with S's term (Raft took it from there),
// which is what the entry answers, so the check then passes as it does
// right after the install.
type snapshotLog struct {
	raft.LogStore
	snaps *snapStore
}

var _ raft.MonotonicLogStore = (*snapshotLog)(nil)

// IsMonotonic is the store's: Raft then empties it at an install rather
// than leave a gap before the entries after the snapshot.
func (l *snapshotLog) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// GetLog reads entry index, or the newest snapshot's last entry (its
// index and term) when the store does not hold it.
func (l *snapshotLog) GetLog(index uint64, log *raft.Log) error {
	err := l.LogStore.GetLog(index, log)
	if !errors.Is(err, raft.ErrLogNotFound) {
		return err
	}
	m, lerr := l.snaps.latest()
	if lerr != nil || m == nil || m.Meta.Index != index {
		return err
	}
	*log = raft.Log{Index: index, Term: m.Meta.Term, Type: raft.LogNoop}
	return nil
}
