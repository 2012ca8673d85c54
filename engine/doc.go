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
// those fields to each other without hiding anything more from users. The
// module's own packages reach the operations users must not call
// (replicated puts, repair, manual flush and dispatch, abandon) through
// internal/engineops (ops.go).
//
// # Durability
//
// A CommitLog flush service syncs: for SyncFlush a put waits for a group
// commit (a sync, and at most one more round for the puts that arrived
// during it); for AsyncFlush it syncs on an interval once enough pages are
// dirty, and everything on a longer interval. A ConsumeQueue flush service
// syncs the queues and then the checkpoint, which is therefore never ahead
// of what is durable. A failed sync turns the store read-only until it is
// reopened: it never reports unsynced data as flushed. A full disk only
// refuses puts until a file can be created again (Store.Health).
//
// # Recovery
//
// Open takes the store's lock file (unless its caller holds it already),
// takes the CommitLog and ConsumeQueue file sizes from the existing files, and reads whether the abort marker
// exists (the last run did not Close: a crash) before writing it again and
// syncing it, so that a crash during recovery is still seen as one. It
// loads the files (a short last file is padded to the file size), syncs
// every directory after a crash (the dead process may have created files
// whose entries were never synced), reads the deleted topics and the
// checkpoint (one that is missing, garbage or short is replaced, and
// recovery then replays from the first CommitLog file). Then (recover.go):
//
//  1. Each ConsumeQueue walks its units from its third-from-last file and
//     is cut after the last valid one; after a clean Close (nothing can be
//     torn) it ends at its last non-zero unit instead, so that a unit
//     damaged while the store was stopped is not taken for the end
//     (unitstartup.go). Without CommitLog files the queues are rebuilt
//     (empty).
//  2. The scan starts, after a clean Close, at the third-from-last
//     CommitLog file; after a crash, at the last file whose first record
//     is older than the checkpoint's minimum timestamp (min of the physic
//     and logics timestamps, less 3 s), and the ConsumeQueues are cut there
//     too, keeping only units that point at the record they index
//     (unitcheck.go): a never-synced queue page may come back holding
//     another file's units.
//  3. The scan checks every record (magic, TOTALSIZE, body CRC unless
//     Config.SkipCRCOnRecover, PHYSICALOFFSET equal to its position; a
//     BLANK record must end its file). After a crash it dispatches each
//     record as it goes, into the ConsumeQueues and the dispatchers given
//     to Open; parsers on other goroutines check the records ahead of it
//     (recovercrc.go) and the queue units are written in batches
//     (recovercq.go). A v2 record stops Open with ErrCorruptStore.
//  4. At a bad record the scan looks for the next intact record
//     (recoverdamage.go). None: the end of the log (a torn tail). One, and
//     the damage is proven (a clean Close, or the record after it older
//     than the checkpoint's physic timestamp): the damaged range is
//     skipped, reported in RecoveryReport.Damaged, never dispatched nor
//     returned by GetMessage. Not proven: a damaged range holding a zeroed
//     sector is a write the crash tore, and the log ends there; anything
//     else follows Config.OnUndecidableDamage (DamageRefuse fails Open with
//     ErrUndecidableDamage naming file and offset, changing nothing).
//  5. The CommitLog is cut at the recovered end: the bytes past it are
//     zeroed and synced and later files removed, so that stale bytes never
//     come back as a record after another crash; after a crash the records
//     from the scan start are synced, as they may exist only in the dead
//     process's page cache.
//  6. If the consumequeue.rebuild marker exists, or after a crash a
//     dispatch failed, or after a clean Close the replay from the largest
//     CommitLog end any queue holds finds a queue that does not line up,
//     every ConsumeQueue is rebuilt from the CommitLog behind that marker
//     (rebuildintent.go), keeping the next offset of queues whose records
//     retention deleted. After a clean Close the units past the recovered
//     end are cut first and the reput service replays from that largest
//     end (RocketMQ 4.5's reput start). A clean start also checks the
//     units it reads: one that is not a unit, points past the CommitLog's
//     end or before the unit before it is rewritten from the CommitLog
//     (ERROR, Health.UnitMismatches), and last units that do not match
//     their records are cut and replayed (unitstartup.go).
//  7. Each damaged record keeps its queue offset with a placeholder unit
//     (damagedtail.go), each queue's next offset is taken from its
//     ConsumeQueue and its minimum from the CommitLog's minimum.
//
// Records of a topic deleted below the offset recorded in DeletedTopicsFile
// are never dispatched, so a crash does not bring its queues back.
// RecoveryReport (Store.Recovery) says what recovery found and did.
// RepairDamaged (an operation of internal/engineops, out of the API)
// rewrites a damaged range with bytes a replica holds (package cluster),
// and its placeholder units with the real ones.
//
// # Replicated records
//
// A store opened for replicated records (engineops.WithRecords, records.go)
// keeps a replicated group's Raft log payload in its CommitLog: the leader
// builds a round's records without writing them, every replica appends the
// same bytes at their offset, and the dispatcher and every reader stop at a
// commit point the caller moves once Raft commits them. The uncommitted
// tail truncates durably, handing its queue offsets out again. The open
// takes the commit point; recovery dispatches nothing past it and keeps the
// whole records past it, invisible. Such a store takes no put.
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
