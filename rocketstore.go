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
// this package re-exports what a user needs.
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
)

// Flush disk types.
const (
	AsyncFlush = engine.AsyncFlush
	SyncFlush  = engine.SyncFlush
)

// Open opens or creates a store in dir on memory-mapped files. Unless the
// config says otherwise, retention watches the usage of the disk holding
// dir (RocketMQ deletes expired files at any hour above 75 %).
func Open(dir string, cfg Config, dispatchers ...dispatch.Dispatcher) (*Store, error) {
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
func OpenFS(fs afero.Fs, cfg Config, dispatchers ...dispatch.Dispatcher) (*Store, error) {
	return engine.Open(memfs.New(fs), cfg, dispatchers...)
}

// NewTagFilter returns a filter for a subscription expression such as "*"
// or "TagA || TagB".
func NewTagFilter(expr string) (*filter.TagFilter, error) { return filter.NewTagFilter(expr) }

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
