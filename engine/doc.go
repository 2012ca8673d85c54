// Package engine is the message store: RocketMQ 4.x's CommitLog, its
// ConsumeQueues, the checkpoint, the flush services, recovery and
// getMessage, on any backend.FS.
//
// # Data flow
//
// Store.Put encodes a record (package record) into the last CommitLog file
// under one lock that assigns its queue offset; the write position is
// published after the bytes are in place. The reput service (package
// dispatch) reads what is published — with SyncFlush, only what is synced —
// and the ConsumeQueue builder appends a 20-byte unit per dispatchable
// record; other dispatchers (the message index, the long-poll arrival hook)
// run after it. GetMessage reads units from a ConsumeQueue, filters them by
// tagsCode, and returns zero-copy views of the records, valid until Release.
//
// # API surface
//
// The exported API is Store and the values it takes and returns. The file
// types behind it (mappedFile, mappedFileQueue, consumeQueue, storeCheckpoint)
// are unexported; callers see read-only views: CommitLog (offsets, file
// size), Checkpoint (timestamps, and SetIndex/Flush for the broker's index),
// Store.Health and Store.Recovery. They stay in this package rather than in
// an engine/internal/ package (raft-wal's small API over internals is the
// model, its package split is not): they share the Store's locks, lifecycle
// and failure state field by field, and a package boundary would export
// those fields to each other without hiding anything more from users.
//
// # Durability and recovery
//
// A CommitLog flush service syncs (group commit for SyncFlush; interval and
// least pages for AsyncFlush), a ConsumeQueue flush service syncs the
// queues and the checkpoint. A failed sync turns the store read-only: it
// never reports unsynced data as flushed. Open takes the store's lock,
// writes the abort marker (durably) and recovers: normally after a clean
// Close, or abnormally after a crash, replaying the CommitLog from the last
// file the checkpoint vouches for. Recovery checks every record (CRC,
// PHYSICALOFFSET = position, torn sectors), cuts the log at the first bad
// one, zeroes and syncs what lies past it, and rebuilds the ConsumeQueue
// units from the scan start. RecoveryReport says what it found.
//
// # Concurrency
//
// Every method of Store is safe for concurrent use. One mutex orders
// appends; readers never lock (they read below published positions and
// hold reference counts on the files they view, so a file is never unmapped
// under a reader). One goroutine dispatches. Every background goroutine
// starts in Open and stops in Close. Manual mode (a switch in
// internal/hooks, out of the API) runs none, for the module's deterministic
// tests and read-only tools, which drive flushes and dispatch themselves.
package engine
