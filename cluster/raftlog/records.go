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

// Committed is implemented by Records whose bytes up to an offset belong
// to the state machine (applied, or installed from a snapshot): the store
// never truncates them, and keeps them at Open even past the frames (a
// snapshot install writes records that no entry of the log holds).
type Committed interface {
	// Committed returns the offset up to which the records are the
	// state machine's.
	Committed() int64
}

// ErrCommitted reports a deletion of the log's tail whose records are
// the state machine's: the store refuses it before changing anything.
var ErrCommitted = errors.New("raftlog: the records of the deleted entries are committed")
