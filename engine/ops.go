package engine

import (
	"context"

	"github.com/rocketstore/rocketstore/internal/engineops/link"
)

// ops are the operations a Store gives the module's own packages through
// internal/engineops (replicated puts, repair, manual flush and dispatch,
// abandon), out of the Store's API.
type ops struct{ s *Store }

func init() { link.Ops = func(s any) any { return ops{s.(*Store)} } }

func (o ops) PutAs(ctx context.Context, m *Message, or link.Origin) (PutResult, error) {
	return o.s.put(ctx, m, &or)
}

func (o ops) PutBatchAs(ctx context.Context, msgs []*Message, or link.Origin) (PutResult, error) {
	return o.s.putBatch(ctx, msgs, &or)
}

func (o ops) RepairRecord(off int64, rec []byte) error { return o.s.commitLog.repair(off, rec) }

func (o ops) RepairDamaged(fixes map[int64][]byte) error { return o.s.repairDamaged(fixes) }

func (o ops) ReputFromOffset() int64 { return o.s.reput.ReputFromOffset() }

func (o ops) Dispatch() (int, error) { return o.s.dispatchPass() }

func (o ops) FlushConsumeQueues(leastPages int) error { return o.s.flushConsumeQueuesNow(leastPages) }

func (o ops) Abandon() { o.s.abandonRunning() }

func (o ops) BuildRecords(msgs []*Message) (Built, error) { return o.s.buildRecords(msgs) }

func (o ops) AppendRecords(b []byte, off int64) error { return o.s.appendRecords(b, off) }

func (o ops) ReadRecords(b []byte, off int64) error { return o.s.readRecords(b, off) }

func (o ops) RecordsEnd() int64 { return o.s.recordsEnd() }

func (o ops) SyncRecords() error { return o.s.syncRecords() }

func (o ops) TruncateRecords(end int64) error { return o.s.truncateRecords(end) }

func (o ops) DropBuilds(from int64) error { return o.s.dropBuildsFrom(from) }

func (o ops) SetCommitPoint(off int64) error { return o.s.setCommitPoint(off) }

func (o ops) CommitPoint() int64 { return o.s.commitPoint() }
