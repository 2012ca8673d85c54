package cluster

import (
	wal "github.com/hashicorp/raft-wal"
	walmetrics "github.com/hashicorp/raft-wal/metrics"
)

// LogStats counts what a replica wrote to its Raft log since it opened.
type LogStats struct {
	// Appends is the number of appends; raft-wal syncs its segment file
	// once an append, so this is also the Raft log's fsync count.
	Appends uint64
	// Entries is the number of entries appended.
	Entries uint64
	// EntryBytes is the entries' encoded size; each entry also takes a
	// frame header of 8 bytes, padding to 8 bytes and an index slot on
	// disk.
	EntryBytes uint64
}

// newLogCollector collects raft-wal's counters for LogStats.
func newLogCollector() *walmetrics.AtomicCollector {
	return walmetrics.NewAtomicCollector(wal.MetricDefinitions)
}

// LogStats returns what this replica wrote to its Raft log since it
// opened (zero before its log is open).
func (n *Node) LogStats() LogStats {
	if n.walStats == nil {
		return LogStats{}
	}
	c := n.walStats.Summary().Counters
	return LogStats{Appends: c["log_appends"], Entries: c["log_entries_written"], EntryBytes: c["log_entry_bytes_written"]}
}
