// Package raftlog is a hashicorp/raft LogStore that keeps the bytes of
// message entries in the broker's CommitLog instead of a log of its own,
// so that each message reaches a replica's disk once.
//
// An entry is one of two things. A records entry's Data is a header (the
// kind KindRecords and the CommitLog offset the leader assigned) and the
// CommitLog records of a round, byte for byte as every replica stores them;
// the store writes those bytes at that offset through Records and keeps
// only a frame of metadata — index, term, offset, size — in its own log.
// Every other entry (state, membership, configuration, no-ops) is a side
// entry: its frame holds the whole entry.
//
// The frames are the index: fixed-size segment files (format.go) of
// CRC-checked frames, scanned at Open to rebuild the index in memory.
// StoreLogs writes the records and the frames, then syncs both at once,
// so that an append waits for one sync. A power cut can then keep a frame
// without its records: each frame holds the CRC of its records, the first
// frame of each StoreLogs call is flagged, and Open checks the records of
// the last call's frames, dropping its entries from the first whose
// records are short or differ. A frame torn by a power cut ends the log,
// and the records past the last whole frame are truncated at Open: both
// belong to a StoreLogs that never returned, which Raft never counted. DeleteRange of the head (compaction) appends a head
// frame and removes the segments wholly before it, keeping the records
// (the CommitLog is the state machine's state); DeleteRange of the tail (a
// suffix a new leader overwrote) zeroes the frames from the first deleted
// one, syncs, and truncates the records after them.
//
// Concurrency: Raft calls the store from several goroutines; writes are
// serialised by a mutex and reads share it (sync.RWMutex).
package raftlog
