package engine

import (
	"errors"

	"github.com/rocketstore/rocketstore/record"
)

// Sentinel errors. Errors returned by the engine wrap one of these (or a
// backend error) with the place they happened; test them with errors.Is.
var (
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("engine: store closed")
	// ErrReadOnly reports a put or flush on a store that turned read-only
	// after a failed sync or dispatch. (To inspect a store without writing
	// to it, open it on a backend/snapshot overlay.)
	ErrReadOnly = errors.New("engine: store is read-only")
	// ErrFlushTimeout reports a SyncFlush put that was stored but not
	// synced within SyncFlushTimeout (RocketMQ's FLUSH_DISK_TIMEOUT).
	ErrFlushTimeout = errors.New("engine: flush disk timeout")
	// ErrFlushFailed reports a sync that failed. Data written since the
	// last successful sync may be lost, so the store stops accepting puts.
	ErrFlushFailed = errors.New("engine: flush failed, store is now read-only")
	// ErrConfig reports an unusable configuration.
	ErrConfig = errors.New("engine: bad config")
	// ErrCorruptStore reports store files that cannot be opened as they
	// are (wrong sizes, unparsable names, inconsistent files).
	ErrCorruptStore = errors.New("engine: corrupt store")
	// ErrNotFound reports a lookup of a message that is not stored.
	ErrNotFound = errors.New("engine: message not found")
	// ErrBatch reports an invalid batch (empty, mixed topics or queues,
	// or a delay level on a batch).
	ErrBatch = errors.New("engine: invalid batch")
	// ErrCommitted reports a truncation of a store of replicated records
	// that would drop committed records (below the commit point).
	ErrCommitted = errors.New("engine: records below the commit point")
	// ErrRecords reports records given to a store of replicated records
	// that are not whole valid records at the CommitLog's end, a commit
	// point or truncation offset that is not a record boundary of the
	// stored records, or a put on such a store (its records are built
	// and appended, not put).
	ErrRecords = errors.New("engine: replicated records out of place")

	// ErrMessageIllegal and the errors wrapping it are returned for
	// messages that cannot be stored (RocketMQ's MESSAGE_ILLEGAL).
	ErrMessageIllegal = record.ErrMessageIllegal
	// ErrTopicTooLong reports a topic over 127 bytes.
	ErrTopicTooLong = record.ErrTopicTooLong
	// ErrMessageTooLarge reports a body over MaxMessageSize, or a record
	// that cannot fit in one CommitLog file.
	ErrMessageTooLarge = record.ErrMessageTooLarge
	// ErrPropertiesTooLarge reports encoded properties over 32767 bytes
	// (RocketMQ's PROPERTIES_SIZE_EXCEEDED).
	ErrPropertiesTooLarge = record.ErrPropertiesTooLarge
)
