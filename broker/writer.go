package broker

import (
	"context"

	"github.com/rocketstore/rocketstore/engine"
)

// Writer stores the messages the broker writes: sends, send-backs,
// delayed deliveries and OffsetMovedEvents. The default writes to the
// broker's store; a replicated broker group (package cluster) orders them
// through its log first, so that every replica writes the same bytes.
type Writer interface {
	// Put stores one message (engine.Store.Put).
	Put(ctx context.Context, m *engine.Message) (engine.PutResult, error)
	// PutBatch stores messages for one queue (engine.Store.PutBatch).
	PutBatch(ctx context.Context, msgs []*engine.Message) (engine.PutResult, error)
	// Writable reports whether this node accepts writes now: a replica
	// that is not its group's leader does not, refuses sends with
	// SERVICE_NOT_AVAILABLE (as a RocketMQ slave does) and delivers no
	// delayed messages.
	Writable() bool
}

// storeWriter is the default Writer.
type storeWriter struct{ s *engine.Store }

func (w storeWriter) Put(ctx context.Context, m *engine.Message) (engine.PutResult, error) {
	return w.s.Put(ctx, m)
}

func (w storeWriter) PutBatch(ctx context.Context, msgs []*engine.Message) (engine.PutResult, error) {
	return w.s.PutBatch(ctx, msgs)
}

func (storeWriter) Writable() bool { return true }

// writer returns the configured Writer or the store.
func (b *Broker) writer() Writer {
	if b.cfg.Writer != nil {
		return b.cfg.Writer
	}
	return storeWriter{b.store}
}

// PutsWait reports whether a send may wait for more than its write into
// the CommitLog's mapping: under SYNC_FLUSH a put waits for the group
// commit, and a configured Writer (a replicated group) waits for its
// replicas. The server answers sends that never wait on the connection's
// read goroutine.
func (b *Broker) PutsWait() bool {
	return b.cfg.Writer != nil || b.store.Config().FlushDiskType == engine.SyncFlush
}
