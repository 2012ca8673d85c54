package raftlog

import "errors"

// Records is where the bytes of records entries live: the broker's
// CommitLog. The store is its only writer while it is open.
type Records interface {
	// End returns the offset just past the last record.
	End() int64
	// Append writes b at off, which is End(); the bytes are durable only
	// after Sync.
	Append(b []byte, off int64) error
	// ReadAt fills b with the bytes at off. Bytes that are no longer kept
	// (the CommitLog's expired files) give an error wrapping ErrGone.
	ReadAt(b []byte, off int64) error
	// Sync makes the appended bytes durable.
	Sync() error
	// Truncate drops the bytes at and past end, durably: a later open of
	// the Records must not find them.
	Truncate(end int64) error
}

// ErrGone reports records that the Records no longer keep. GetLog turns it
// into raft.ErrLogNotFound, on which Raft sends the follower a snapshot.
var ErrGone = errors.New("raftlog: records no longer kept")
