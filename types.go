package rocketstore

import (
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/record"
)

// The value types of the API are aliases: the engine, the broker and the
// tools use the same types, documented where they are declared.

// Config configures a Store; the zero value of every field means RocketMQ
// 4.9.4's default (see engine.Config).
type Config = engine.Config

// FlushDiskType selects when a put is acknowledged relative to the disk.
type FlushDiskType = engine.FlushDiskType

// Flush disk types (Config.FlushDiskType).
const (
	// AsyncFlush acknowledges a put once it is in the page cache
	// (RocketMQ's ASYNC_FLUSH, the default).
	AsyncFlush = engine.AsyncFlush
	// SyncFlush acknowledges a put only after it is synced, with group
	// commit (RocketMQ's SYNC_FLUSH).
	SyncFlush = engine.SyncFlush
)

// DamagePolicy says what recovery does with a damaged CommitLog record that
// intact records follow but that it cannot prove to lie in the part of the
// log that was durable before the crash (Config.OnUndecidableDamage).
type DamagePolicy = engine.DamagePolicy

// Damage policies (Config.OnUndecidableDamage).
const (
	// DamageRefuse (the default) makes Open fail with an error wrapping
	// ErrCorruptStore, naming the file and offset.
	DamageRefuse = engine.DamageRefuse
	// DamageTruncate cuts the CommitLog at the damaged record (RocketMQ's
	// behaviour).
	DamageTruncate = engine.DamageTruncate
	// DamageSkip keeps the records after it and skips the damaged one.
	DamageSkip = engine.DamageSkip
)

// RetentionPolicy says when CommitLog files expire (Config.Retention).
type RetentionPolicy = engine.RetentionPolicy

// RetentionReport says what a retention round did (DeleteExpiredFiles).
type RetentionReport = engine.RetentionReport

// Message is what a producer hands to the store. The store fills in the
// queue offset, physical offset, store time, store host and body CRC.
type Message = record.Message

// MessageExt is a stored message, decoded; it owns its memory.
type MessageExt = record.MessageExt

// DecodeMessage decodes one record returned by GetMessage
// (MessageView.Record); the result owns its memory.
func DecodeMessage(rec []byte) (*MessageExt, error) { return record.Decode(rec, -1, false) }

// PutResult describes a stored message (or batch).
type PutResult = engine.PutResult

// GetMessageStatus is the outcome of GetMessage (RocketMQ's
// GetMessageStatus).
type GetMessageStatus = engine.GetMessageStatus

// The statuses; engine.GetMessageStatus gives the NextBeginOffset of each.
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

// GetMessageResult is what GetMessage returns. Its views stay valid until
// Release, which the caller must call exactly once.
type GetMessageResult = engine.GetMessageResult

// MessageView is one message of a GetMessageResult: a view of its record
// in the CommitLog, valid until the result is released.
type MessageView = engine.MessageView

// MessageFilter selects messages in GetMessage (WithFilter).
type MessageFilter = engine.MessageFilter

// TagFilter matches messages against a tag subscription expression, with
// RocketMQ's semantics (the ConsumeQueue's tag hash decides). It is
// immutable and safe for concurrent use.
type TagFilter = filter.TagFilter

// NewTagFilter returns a filter for a subscription expression such as "*"
// or "TagA || TagB"; a malformed expression is an error.
func NewTagFilter(expr string) (*TagFilter, error) { return filter.NewTagFilter(expr) }

// Dispatcher receives every stored record in CommitLog order, after the
// store has built its ConsumeQueue unit (WithDispatcher says what it may
// do).
type Dispatcher = dispatch.Dispatcher

// DispatchRequest is one record to dispatch (RocketMQ's DispatchRequest).
// Its byte slices alias the CommitLog and are valid only during Dispatch.
type DispatchRequest = dispatch.Request

// Health is a snapshot of the store's running state and fault counters.
type Health = engine.Health

// RecoveryReport says what Open found and did.
type RecoveryReport = engine.RecoveryReport

// DamagedRange is a stretch of the CommitLog that recovery found damaged
// with intact records after it.
type DamagedRange = engine.DamagedRange
