// Package rocketstore is a message store with the semantics and on-disk
// layout of the Apache RocketMQ 4.x broker store: a CommitLog of every
// message, one ConsumeQueue per topic queue, a checkpoint, crash recovery,
// and getMessage with tag filtering.
//
// Open a store on a directory (memory-mapped files, the production backend)
// or OpenFS on any afero.Fs (in memory, for tests and embedding):
//
//	s, err := rocketstore.Open("/var/lib/rocketstore", rocketstore.Config{})
//	res, err := s.Put(ctx, &rocketstore.Message{Topic: "orders", Body: body,
//		Properties: map[string]string{"TAGS": "created", "KEYS": "order-42"}})
//	got, err := s.GetMessage("group", "orders", 0, 0, 32, nil)
//	defer got.Release()
//
// The engine lives in package engine, the file backends in backend/mmap and
// backend/memfs, the reput service in dispatch and the tag filter in filter;
// this package re-exports (as type aliases) everything its functions and
// the Store's methods take or return, so that a user imports this package
// alone. The aliased types' fields and methods are documented in the
// package that defines them (go doc engine.Store, go doc engine.Config).
//
// Unlike raft-wal, whose public types live in a leaf types package, the
// types stay where they are implemented and are aliased here: the engine,
// the broker and the tools share them, and an alias keeps one type (no
// conversions) while this package stays the one import a user needs.
package rocketstore

import (
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/engine/record"
	"github.com/rocketstore/rocketstore/filter"
)

// Re-exported types; see package engine for their documentation.
type (
	// Store is an open message store.
	Store = engine.Store
	// Config configures a store; zero fields mean RocketMQ's defaults.
	Config = engine.Config
	// Message is a message to store.
	Message = engine.Message
	// MessageExt is a stored message, decoded.
	MessageExt = engine.MessageExt
	// PutResult describes a stored message.
	PutResult = engine.PutResult
	// GetMessageResult holds the messages found by GetMessage.
	GetMessageResult = engine.GetMessageResult
	// GetMessageStatus is the outcome of GetMessage.
	GetMessageStatus = engine.GetMessageStatus
	// MessageFilter selects messages in GetMessage.
	MessageFilter = engine.MessageFilter
	// MessageView is one message in a GetMessageResult: a zero-copy view
	// of its record, valid until the result is released.
	MessageView = engine.MessageView
	// TagFilter is a MessageFilter for a tag subscription expression
	// (NewTagFilter).
	TagFilter = filter.TagFilter
	// FlushDiskType is AsyncFlush or SyncFlush (Config.FlushDiskType).
	FlushDiskType = engine.FlushDiskType
	// RetentionPolicy says when expired CommitLog files are deleted
	// (Config.Retention).
	RetentionPolicy = engine.RetentionPolicy
	// RetentionReport says what a clean round deleted
	// (Store.DeleteExpiredFiles).
	RetentionReport = engine.RetentionReport
	// DamagePolicy says what recovery does with undecidable damage
	// (Config.OnUndecidableDamage).
	DamagePolicy = engine.DamagePolicy
	// RecoveryReport says what recovery found and did (Store.Recovery).
	RecoveryReport = engine.RecoveryReport
	// DamagedRange is a damaged CommitLog range that recovery skipped
	// (RecoveryReport.Damaged).
	DamagedRange = engine.DamagedRange
	// Health is the store's state for monitoring (Store.Health).
	Health = engine.Health
	// CommitLog gives the CommitLog's offsets and file size
	// (Store.CommitLog).
	CommitLog = engine.CommitLog
	// Checkpoint is the store's checkpoint file (Store.Checkpoint).
	Checkpoint = engine.Checkpoint
	// Dispatcher receives every stored record in CommitLog order, after
	// the ConsumeQueues (pass extra dispatchers to Open, e.g. an index).
	Dispatcher = dispatch.Dispatcher
	// DispatchRequest is what a Dispatcher receives for one record.
	DispatchRequest = dispatch.Request
)

// Flush disk types.
const (
	AsyncFlush = engine.AsyncFlush
	SyncFlush  = engine.SyncFlush
)

// GetMessage statuses (RocketMQ's GetMessageStatus; see
// engine.GetMessageStatus for what each means for the next offset).
const (
	Found               = engine.Found
	NoMatchedMessage    = engine.NoMatchedMessage
	MessageWasRemoving  = engine.MessageWasRemoving
	OffsetFoundNull     = engine.OffsetFoundNull
	OffsetOverflowBadly = engine.OffsetOverflowBadly
	OffsetOverflowOne   = engine.OffsetOverflowOne
	OffsetTooSmall      = engine.OffsetTooSmall
	NoMatchedLogicQueue = engine.NoMatchedLogicQueue
	NoMessageInQueue    = engine.NoMessageInQueue
)

// Damage policies (Config.OnUndecidableDamage).
const (
	DamageRefuse   = engine.DamageRefuse
	DamageSkip     = engine.DamageSkip
	DamageTruncate = engine.DamageTruncate
)

// Open opens or creates a store in dir on memory-mapped files. Unless the
// config says otherwise, retention watches the usage of the disk holding
// dir (RocketMQ deletes expired files at any hour above 75 %).
func Open(dir string, cfg Config, dispatchers ...Dispatcher) (*Store, error) {
	fs, err := mmap.New(dir)
	if err != nil {
		return nil, err
	}
	if cfg.Retention.DiskUsage == nil {
		cfg.Retention.DiskUsage = func() (float64, error) { return mmap.DiskUsage(fs.Root()) }
	}
	return engine.Open(fs, cfg, dispatchers...)
}

// OpenFS opens or creates a store on an afero file system (nil: a new
// in-memory one). Data reaches fs only when it is synced, so dropping a
// store without Close models a power cut.
func OpenFS(fs afero.Fs, cfg Config, dispatchers ...Dispatcher) (*Store, error) {
	return engine.Open(memfs.New(fs), cfg, dispatchers...)
}

// NewTagFilter returns a filter for a subscription expression such as "*"
// or "TagA || TagB".
func NewTagFilter(expr string) (*TagFilter, error) { return filter.NewTagFilter(expr) }

// DecodeMessage decodes one record returned by GetMessage.
func DecodeMessage(rec []byte) (*MessageExt, error) { return record.Decode(rec, -1, false) }

// Errors returned by the store; test them with errors.Is. An error from a
// failed sync wraps both the sentinel and the file system's cause, so
// errors.Is(err, ErrFlushFailed) and errors.Is(err, syscall.ENOSPC) both
// hold for a Put that met a full disk.
var (
	// ErrClosed reports a call on a closed store.
	ErrClosed = engine.ErrClosed
	// ErrReadOnly reports a put or flush on a store that turned read-only
	// after a failed sync or dispatch; it wraps the first failure.
	ErrReadOnly = engine.ErrReadOnly
	// ErrFlushTimeout reports a SyncFlush put that was stored but not
	// synced within Config.SyncFlushTimeout.
	ErrFlushTimeout = engine.ErrFlushTimeout
	// ErrFlushFailed reports a sync that failed; the store is read-only
	// from then on.
	ErrFlushFailed = engine.ErrFlushFailed
	// ErrConfig reports an unusable configuration.
	ErrConfig = engine.ErrConfig
	// ErrCorruptStore reports store files that cannot be opened as they are.
	ErrCorruptStore = engine.ErrCorruptStore
	// ErrNotFound reports a lookup of a message that is not stored.
	ErrNotFound = engine.ErrNotFound
	// ErrBatch reports an invalid batch for PutBatch.
	ErrBatch = engine.ErrBatch
	// ErrMessageIllegal is wrapped by every error for a message that
	// cannot be stored (RocketMQ's MESSAGE_ILLEGAL).
	ErrMessageIllegal = engine.ErrMessageIllegal
	// ErrTopicTooLong reports a topic over 127 bytes.
	ErrTopicTooLong = engine.ErrTopicTooLong
	// ErrMessageTooLarge reports a body over Config.MaxMessageSize.
	ErrMessageTooLarge = engine.ErrMessageTooLarge
	// ErrPropertiesTooLarge reports encoded properties over 32767 bytes.
	ErrPropertiesTooLarge = engine.ErrPropertiesTooLarge
)
