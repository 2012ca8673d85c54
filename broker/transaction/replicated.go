package transaction

import (
	"context"
	"fmt"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Transactions in a replicated broker group.
//
// Every message the service writes goes through Config.Put — the group's
// log — so half messages, commits, op records and check-back copies are
// on every replica, at the same queue offsets. The service's maps are
// only a cache of the half and op queues: the leader keeps them up to
// date with its own writes, and a replica that becomes leader has them
// rebuilt from its queues (Invalidate, then fresh before the first
// END_TRANSACTION or check-back), after everything the previous leader
// committed is applied. So a transaction prepared on one leader is
// committed or rolled back on the next exactly once (a commit whose op
// record the old leader did not get to write is found by the rebuild's
// lost-op repair), and only the leader checks back (Config.Active).

// Invalidate marks the state as possibly missing what other replicas
// wrote: it is rebuilt from the queues before it is used again. A
// replicated group calls it when a replica starts leading, before it
// takes writes.
func (s *Service) Invalidate() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// fresh rebuilds a stale state from the half and op queues once they are
// dispatched up to the CommitLog's end. The caller holds s.mu.
func (s *Service) fresh(ctx context.Context) error {
	if !s.stale {
		return nil
	}
	if !s.cfg.Active() {
		return fmt.Errorf("transaction: %w", engine.ErrReadOnly)
	}
	if err := s.store.WaitDispatched(ctx, s.store.CommitLog().MaxOffset()); err != nil {
		return fmt.Errorf("transaction: wait for dispatch before rebuilding: %w", err)
	}
	s.open, s.rootOf, s.rootByCL, s.ended = map[int64]*tx{}, map[int64]int64{}, map[int64]int64{}, map[int64]Outcome{}
	if err := s.rebuild(ctx); err != nil {
		return err
	}
	s.stale = false
	s.cfg.Logger.Info("transaction state rebuilt from the queues", "open", len(s.open), "ended", len(s.ended))
	return nil
}

// put writes one message with Config.Put or the store.
func (s *Service) put(ctx context.Context, m *record.Message) (engine.PutResult, error) {
	if s.cfg.Put != nil {
		return s.cfg.Put(ctx, m)
	}
	return s.store.Put(ctx, m)
}
