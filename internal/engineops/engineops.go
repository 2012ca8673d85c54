// Package engineops gives the module's own packages the operations of an
// engine.Store that are not part of its API: puts that carry a replicated
// group leader's origin, damage repair, manual flush and dispatch, and
// abandoning a store as a killed process would. The cluster package
// replicates and repairs with them; the broker drives a manual store with
// them; the contract and crash tests use them. Keeping them here keeps
// the engine's exported surface to what a store user calls.
package engineops

import (
	"context"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops/link"
)

// Origin is the store timestamp and store host that a replicated broker
// group's leader assigned to a message (PutAs).
type Origin = link.Origin

// Ops are a store's internal operations.
type Ops interface {
	// PutAs is Put with the store timestamp and host taken from o.
	PutAs(ctx context.Context, m *engine.Message, o Origin) (engine.PutResult, error)
	// PutBatchAs is PutBatch with the store timestamp and host taken
	// from o.
	PutBatchAs(ctx context.Context, msgs []*engine.Message, o Origin) (engine.PutResult, error)
	// RepairRecord overwrites the record at CommitLog offset off with
	// rec, a healthy replica's copy of it, and syncs it. rec must be one
	// whole valid record for position off, below the published end.
	RepairRecord(off int64, rec []byte) error
	// RepairDamaged rewrites every range that the store's DamagedRanges
	// returns with a healthy copy's bytes (fixes maps each range's
	// Offset to them) and makes their records visible; all or none.
	RepairDamaged(fixes map[int64][]byte) error
	// ReputFromOffset returns the CommitLog offset the dispatcher reads
	// next.
	ReputFromOffset() int64
	// Dispatch runs one dispatch pass in the caller's goroutine (a store
	// in manual mode dispatches only when asked) and returns how many
	// records it dispatched.
	Dispatch() (int, error)
	// FlushConsumeQueues flushes every ConsumeQueue under the least-pages
	// rule; with 0 it also flushes the checkpoint.
	FlushConsumeQueues(leastPages int) error
	// Abandon stops the store's goroutines and releases its files and
	// lock without writing anything more, leaving the abort marker: what
	// a killed process leaves behind. Every later call returns ErrClosed.
	Abandon()

	// The operations of a store opened for replicated records
	// (WithRecords): a replicated group's Raft log keeps its records
	// entries in the CommitLog, each message written once per replica.
	// Records written this way are invisible (never dispatched nor read)
	// until the commit point passes them. On another store they fail
	// with engine.ErrRecords.

	// BuildRecords builds the CommitLog records of msgs at the end of what
	// is written and built, with queue offsets, physical offsets and the
	// store timestamp assigned as a put does, without writing them. It
	// builds a prefix of msgs: when a message does not fit in the current
	// file the batch ends with a BLANK record, and the rest goes into the
	// next batch.
	BuildRecords(msgs []*engine.Message) (engine.Built, error)
	// AppendRecords writes b, whole records for offset off (a build's, or
	// a copy of a leader's), at the CommitLog's written end, which off
	// must be; the queue offsets follow the records.
	AppendRecords(b []byte, off int64) error
	// ReadRecords fills b with the written bytes at off, committed or not;
	// bytes no longer kept give engine.ErrNotFound.
	ReadRecords(b []byte, off int64) error
	// RecordsEnd returns the CommitLog's written end.
	RecordsEnd() int64
	// SyncRecords makes every written byte durable.
	SyncRecords() error
	// TruncateRecords drops the records at and past end, written or built,
	// durably, and gives their queue offsets back. An end below the commit
	// point fails with engine.ErrCommitted.
	TruncateRecords(end int64) error
	// DropBuilds discards the pending builds at and past from (a round
	// that was never appended), giving their queue offsets back; written
	// records are never touched.
	DropBuilds(from int64) error
	// SetCommitPoint moves the commit point forward to off, a record
	// boundary at or below the written end; a smaller off changes nothing.
	SetCommitPoint(off int64) error
	// CommitPoint returns the commit point.
	CommitPoint() int64
}

// WithRecords returns cfg set to open a store of replicated records whose
// commit point is commit: recovery dispatches nothing past it, and the
// whole records past it stay in the CommitLog, invisible until the commit
// point moves past them. The Raft side gives the CommitLog offset it
// knows to be committed.
func WithRecords(cfg engine.Config, commit int64) engine.Config {
	link.Records(&cfg, commit)
	return cfg
}

// Of returns s's internal operations.
func Of(s *engine.Store) Ops { return link.Ops(s).(Ops) }
