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
}

// Of returns s's internal operations.
func Of(s *engine.Store) Ops { return link.Ops(s).(Ops) }
