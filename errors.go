package rocketstore

import "github.com/rocketstore/rocketstore/engine"

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
