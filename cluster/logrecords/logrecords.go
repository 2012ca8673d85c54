// Package logrecords is the raftlog.Records of a replicated group's
// replica: the CommitLog of its engine store, opened for replicated
// records (engineops.WithRecords). The raftlog LogStore writes the records
// entries' bytes through it, so that each message reaches a replica's
// disk once; the store dispatches and serves them only once the commit
// point (engineops.Ops.SetCommitPoint) passes them.
package logrecords

import (
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/cluster/raftlog"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
)

// Records is a raftlog.Records over an engine store's CommitLog.
type Records struct {
	ops engineops.Ops
}

var (
	_ raftlog.Records   = (*Records)(nil)
	_ raftlog.Committed = (*Records)(nil)
)

// New returns the Records of s, which must have been opened with
// engineops.WithRecords.
func New(s *engine.Store) *Records { return &Records{ops: engineops.Of(s)} }

// End returns the CommitLog's written end, committed or not.
func (r *Records) End() int64 { return r.ops.RecordsEnd() }

// Append writes b, whole CommitLog records for offset off, at the
// CommitLog's end (which off must be).
func (r *Records) Append(b []byte, off int64) error { return r.ops.AppendRecords(b, off) }

// ReadAt fills b with the written bytes at off; bytes that retention
// removed give an error wrapping raftlog.ErrGone.
func (r *Records) ReadAt(b []byte, off int64) error {
	err := r.ops.ReadRecords(b, off)
	if errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("%w: %w", raftlog.ErrGone, err)
	}
	return err
}

// Sync makes the appended bytes durable.
func (r *Records) Sync() error { return r.ops.SyncRecords() }

// Truncate drops the records at and past end, durably, with the queue
// offsets they took. It refuses an end below the commit point
// (engine.ErrCommitted).
func (r *Records) Truncate(end int64) error { return r.ops.TruncateRecords(end) }

// Committed returns the store's commit point: the records below it are
// applied (or installed from a snapshot) and never truncated.
func (r *Records) Committed() int64 { return r.ops.CommitPoint() }
