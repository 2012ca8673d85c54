// Package rocketstore is a message store with the semantics and on-disk
// layout of the Apache RocketMQ 4.x broker store: a CommitLog of every
// message, one ConsumeQueue per topic queue, a checkpoint, crash recovery,
// and getMessage with tag filtering.
//
// This package is the embedding API: open a store, put messages, read them
// back by queue, subscribe a dispatcher to every stored record, close.
// Open a store on a directory (memory-mapped files, the production backend)
// or OpenFS on any backend.FS (backend/memfs keeps one in memory, for tests
// and embedding):
//
//	s, err := rocketstore.Open("/var/lib/rocketstore", rocketstore.Config{})
//	res, err := s.Put(ctx, &rocketstore.Message{Topic: "orders", Body: body,
//		Properties: map[string]string{"TAGS": "created", "KEYS": "order-42"}})
//	err = s.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes))
//	got, err := s.GetMessage("orders", 0, 0, 32, rocketstore.WithFilter(f))
//	defer got.Release()
//
// The value types (Message, PutResult, Config, GetMessageResult, ...) are
// aliases of the types the engine, the broker and the tools share, so a
// value passes between this package and those without conversion. Store
// wraps the engine's store and exposes only what an embedding user needs;
// the broker and the cluster drive the engine directly (package engine).
package rocketstore

import (
	"context"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
)

// Store is an open message store. All methods are safe for concurrent use.
type Store struct {
	s *engine.Store
}

// Option configures Open and OpenFS beyond Config.
type Option func(*options)

type options struct {
	dispatchers []dispatch.Dispatcher
}

// WithDispatcher adds d to the dispatchers that receive every stored
// record, in CommitLog order, after its ConsumeQueue unit is built (an
// index of your own, say). Options apply in order.
//
// d must be idempotent (recovery replays records) and must not keep the
// request's slices after returning; an error makes the store retry the
// record and report it in Health. It runs on the store's dispatch
// goroutine or, with SyncFlush, on the goroutine of the Put that led the
// group commit, before that Put returns; so it must be quick and must not
// call the Store's methods that write or close (Put, PutBatch,
// DeleteTopic, Close).
func WithDispatcher(d Dispatcher) Option {
	return func(o *options) { o.dispatchers = append(o.dispatchers, d) }
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Open opens or creates a store in dir on memory-mapped files. Unless
// cfg.Retention.DiskUsage is set, retention watches the usage of the disk
// holding dir (RocketMQ deletes expired files at any hour above 75 %).
// Open runs recovery (see Recovery) and starts the store's flush, dispatch
// and clean services, which Close stops.
func Open(dir string, cfg Config, opts ...Option) (*Store, error) {
	fs, err := mmap.New(dir)
	if err != nil {
		return nil, err
	}
	if cfg.Retention.DiskUsage == nil {
		cfg.Retention.DiskUsage = func() (float64, error) { return mmap.DiskUsage(fs.Root()) }
	}
	return open(fs, cfg, opts)
}

// OpenFS opens or creates a store on a file backend; nil means a new
// in-memory one (backend/memfs). On memfs, data reaches the durable image
// only when it is synced, so dropping a store without Close and opening a
// new memfs.FS on the same image models a power cut.
func OpenFS(fs backend.FS, cfg Config, opts ...Option) (*Store, error) {
	if fs == nil {
		fs = memfs.New(nil)
	}
	return open(fs, cfg, opts)
}

func open(fs backend.FS, cfg Config, opts []Option) (*Store, error) {
	s, err := engine.Open(fs, cfg, collect(opts).dispatchers...)
	if err != nil {
		return nil, err
	}
	return &Store{s: s}, nil
}

// Put stores m in m.Topic's queue m.QueueID and returns where. With
// AsyncFlush it returns once the record is in the page cache; with
// SyncFlush (unless the message's WAIT property is "false") once it is
// synced, or with ErrFlushTimeout when the sync takes longer than
// Config.SyncFlushTimeout (the message is stored all the same, as in
// RocketMQ). ctx bounds the wait for the put lock and the sync. A message
// with a DELAY property goes to the schedule topic (PutResult.Topic says
// so). GetMessage sees the message once it is dispatched (WaitDispatched).
func (s *Store) Put(ctx context.Context, m *Message) (PutResult, error) {
	return s.s.Put(ctx, m)
}

// PutBatch stores msgs, all for the same topic and queue, as consecutive
// records under one lock; the result describes the first record and
// counts them (MsgNum). An invalid batch fails with ErrBatch.
func (s *Store) PutBatch(ctx context.Context, msgs []*Message) (PutResult, error) {
	return s.s.PutBatch(ctx, msgs)
}

// WaitDispatched waits until every record below CommitLog offset off is in
// its ConsumeQueue (and has reached the dispatchers), so that GetMessage
// finds it: pass PutResult.WroteOffset + WroteBytes. It returns ctx's
// error when ctx ends first, or the store's when it is closed.
func (s *Store) WaitDispatched(ctx context.Context, off int64) error {
	return s.s.WaitDispatched(ctx, off)
}

// GetOption configures one GetMessage call.
type GetOption func(*getOptions)

type getOptions struct {
	filter MessageFilter
}

// WithFilter returns only the messages that f matches (a *TagFilter from
// NewTagFilter, say; nil: all). The messages it skips still advance
// NextBeginOffset.
func WithFilter(f MessageFilter) GetOption {
	if tf, ok := f.(*TagFilter); ok && tf == nil {
		f = nil // a nil *TagFilter in the interface would not read as nil
	}
	return func(o *getOptions) { o.filter = f }
}

// GetMessage reads up to maxMsgNums messages of topic's queue queueID from
// queue offset offset, as RocketMQ's getMessage: Status says what was found
// and NextBeginOffset where to read next (see GetMessageStatus). It does
// not wait for messages. Call Release on the result exactly once when done
// with its views; DecodeMessage decodes a view's record into a message
// that outlives the result.
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgNums int, opts ...GetOption) (*GetMessageResult, error) {
	var o getOptions
	for _, opt := range opts {
		opt(&o)
	}
	return s.s.GetMessage(topic, queueID, offset, maxMsgNums, o.filter)
}

// LookMessageByOffset decodes the message stored at a CommitLog offset
// (PutResult.WroteOffset, MessageExt.CommitLogOffset); ErrNotFound when
// none is.
func (s *Store) LookMessageByOffset(commitLogOffset int64) (*MessageExt, error) {
	return s.s.LookMessageByOffset(commitLogOffset)
}

// LookMessageByMsgID decodes the message with an offset message id
// (PutResult.MsgID, MessageExt.MsgID).
func (s *Store) LookMessageByMsgID(id string) (*MessageExt, error) {
	return s.s.LookMessageByMsgID(id)
}

// MinOffsetInQueue returns the first queue offset still held in a queue
// (0 for an unknown queue).
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	return s.s.MinOffsetInQueue(topic, queueID)
}

// MaxOffsetInQueue returns the queue offset the next message of a queue
// gets, i.e. one past the last dispatched one (0 for an unknown queue).
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	return s.s.MaxOffsetInQueue(topic, queueID)
}

// CommitLogOffsetInQueue returns the CommitLog offset of the message at a
// queue offset; ErrNotFound when the queue does not hold it.
func (s *Store) CommitLogOffsetInQueue(topic string, queueID int32, queueOffset int64) (int64, error) {
	return s.s.CommitLogOffsetInQueue(topic, queueID, queueOffset)
}

// MinCommitLogOffset returns the CommitLog offset of the oldest byte held
// (it grows as retention deletes files).
func (s *Store) MinCommitLogOffset() int64 { return s.s.CommitLog().MinOffset() }

// MaxCommitLogOffset returns the CommitLog offset after the last stored
// record.
func (s *Store) MaxCommitLogOffset() int64 { return s.s.CommitLog().MaxOffset() }

// FlushedCommitLogOffset returns the CommitLog offset up to which the
// store is synced: what survives a power cut.
func (s *Store) FlushedCommitLogOffset() int64 { return s.s.CommitLog().FlushedWhere() }

// Topics returns every topic with a ConsumeQueue and its queue ids.
func (s *Store) Topics() map[string][]int32 { return s.s.Topics() }

// DeleteTopic removes a topic's ConsumeQueues (RocketMQ's deleteTopics):
// its messages can no longer be read through its queues, a topic of the
// same name starts again at queue offset 0, and the CommitLog bytes go with
// retention. Stop sending to the topic first.
func (s *Store) DeleteTopic(topic string) error { return s.s.DeleteTopic(topic) }

// DeleteExpiredFiles runs one retention round now, as the clean service
// does on its own per Config.Retention: it deletes the CommitLog files that
// expired under p at time now (or, with force, the oldest ones regardless
// of age, as RocketMQ does above DiskCleanForciblyRatio) and the
// ConsumeQueue files that only point into them.
func (s *Store) DeleteExpiredFiles(now time.Time, p RetentionPolicy, force bool) (RetentionReport, error) {
	return s.s.DeleteExpiredFiles(now, p, force)
}

// Config returns the store's configuration with the defaults filled in
// and the file sizes found on disk.
func (s *Store) Config() Config { return s.s.Config() }

// Health returns the store's running state and fault counters.
func (s *Store) Health() Health { return s.s.Health() }

// Recovery returns what Open's recovery found and did.
func (s *Store) Recovery() RecoveryReport { return s.s.Recovery() }

// Close stops the store's services, flushes and syncs everything, writes
// the checkpoint and marks a clean shutdown; later calls return nil, and
// other methods ErrClosed.
func (s *Store) Close() error { return s.s.Close() }
