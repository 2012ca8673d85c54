package cluster

import (
	wal "github.com/hashicorp/raft-wal"
	walmetrics "github.com/hashicorp/raft-wal/metrics"
)

// LogStats counts what a replica wrote to its Raft log since it opened.
type LogStats struct {
	// Appends is the number of appends (StoreLogs calls that wrote).
	Appends uint64
	// Entries is the number of entries appended.
	Entries uint64
	// EntryBytes is the entries' encoded size.
	EntryBytes uint64
	// Bytes is what the appends wrote to the log's files: raft-wal's
	// entries with their 8-byte frame headers (its padding to 8 bytes
	// and index slots not counted); raftlog's frames and the records it
	// put in the CommitLog.
	Bytes uint64
	// RecordBytes is the part of Bytes that raftlog wrote to the
	// CommitLog (the records entries of LogStoreRecords): the messages'
	// records, which the state machine then writes no more.
	RecordBytes uint64
	// Syncs is the number of fsyncs the appends made: raft-wal syncs
	// its segment once an append; raftlog syncs the records it wrote and
	// then the frames.
	Syncs uint64
}

// newLogCollector collects raft-wal's counters for LogStats.
func newLogCollector() *walmetrics.AtomicCollector {
	return walmetrics.NewAtomicCollector(wal.MetricDefinitions)
}

// LogStats returns what this replica wrote to its Raft log since it
// opened (zero before its log is open).
func (n *Node) LogStats() LogStats {
	if n.rlog != nil {
		s := n.rlog.Stats()
		return LogStats{Appends: s.Appends, Entries: s.Entries, EntryBytes: s.EntryBytes,
			Bytes: s.FrameBytes + s.RecordBytes, RecordBytes: s.RecordBytes, Syncs: s.Syncs}
	}
	if n.walStats == nil {
		return LogStats{}
	}
	c := n.walStats.Summary().Counters
	ls := LogStats{Appends: c["log_appends"], Entries: c["log_entries_written"], EntryBytes: c["log_entry_bytes_written"]}
	ls.Bytes, ls.Syncs = ls.EntryBytes+8*ls.Entries, ls.Appends
	return ls
}
