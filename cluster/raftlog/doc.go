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
// StoreLogs writes and syncs the records, then writes and syncs the
// frames, so that a frame on disk always has its records on disk; a frame torn by
// a power cut ends the log, and the records past the last whole frame are
// truncated at Open: they belong to a StoreLogs that never returned, which
// Raft never counted. DeleteRange of the head (compaction) appends a head
// frame and removes the segments wholly before it, keeping the records
// (the CommitLog is the state machine's state); DeleteRange of the tail (a
// suffix a new leader overwrote) zeroes the frames from the first deleted
// one, syncs, and truncates the records after them.
//
// Concurrency: Raft calls the store from several goroutines; writes are
// serialised by a mutex and reads share it (sync.RWMutex).
package raftlog
