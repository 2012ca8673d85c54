package rocketstore

import (
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
)

// GetMessageStatus is the outcome of GetMessage (RocketMQ's
// GetMessageStatus).
type GetMessageStatus int

// The statuses, with the NextBeginOffset each one gives.
const (
	// Found: at least one message; next = offset + units scanned.
	Found GetMessageStatus = iota
	// NoMatchedMessage: units were scanned but none matched the filter.
	NoMatchedMessage
	// MessageWasRemoving: the CommitLog no longer holds the first record.
	MessageWasRemoving
	// OffsetFoundNull: no ConsumeQueue file holds the offset; next = the
	// start of the next file.
	OffsetFoundNull
	// OffsetOverflowBadly: offset > max; next = max (never 0).
	OffsetOverflowBadly
	// OffsetOverflowOne: offset == max, nothing new yet; next = offset.
	OffsetOverflowOne
	// OffsetTooSmall: offset < min; next = min.
	OffsetTooSmall
	// NoMatchedLogicQueue: the queue does not exist; next = 0.
	NoMatchedLogicQueue
	// NoMessageInQueue: the queue is empty; next = 0.
	NoMessageInQueue
)

// String returns RocketMQ's name for the status.
func (s GetMessageStatus) String() string { return engine.GetMessageStatus(s).String() }

// GetOption configures one GetMessage call.
type GetOption func(*getOptions)

type getOptions struct {
	filter *TagFilter
}

// WithFilter returns only the messages that f matches (nil: all). The
// messages it skips still advance NextBeginOffset.
func WithFilter(f *TagFilter) GetOption { return func(o *getOptions) { o.filter = f } }

// TagFilter matches messages against a tag subscription expression, with
// RocketMQ's semantics (the ConsumeQueue's tag hash decides). It is
// immutable and safe for concurrent use.
type TagFilter struct {
	f *filter.TagFilter
}

// NewTagFilter returns a filter for a subscription expression such as "*"
// or "TagA || TagB"; a malformed expression is an error.
func NewTagFilter(expr string) (*TagFilter, error) {
	f, err := filter.NewTagFilter(expr)
	if err != nil {
		return nil, err
	}
	return &TagFilter{f: f}, nil
}

// GetMessageResult is what GetMessage returns. Its views stay valid until
// Release, which the caller must call exactly once.
type GetMessageResult struct {
	// Status is the outcome; NextBeginOffset is the queue offset to read
	// from next.
	Status          GetMessageStatus
	NextBeginOffset int64
	// MinOffset and MaxOffset are the queue's offsets at the time of the
	// call.
	MinOffset int64
	MaxOffset int64
	// Messages are in queue order.
	Messages []MessageView

	r *engine.GetMessageResult
}

func newGetMessageResult(r *engine.GetMessageResult) *GetMessageResult {
	out := &GetMessageResult{Status: GetMessageStatus(r.Status), NextBeginOffset: r.NextBeginOffset,
		MinOffset: r.MinOffset, MaxOffset: r.MaxOffset, r: r}
	if len(r.Messages) > 0 {
		out.Messages = make([]MessageView, len(r.Messages))
		for i, v := range r.Messages {
			out.Messages[i] = MessageView(v)
		}
	}
	return out
}

// Release returns the views' files to the store; the views must not be
// used afterwards.
func (r *GetMessageResult) Release() {
	if r.r != nil {
		r.r.Release()
		r.r, r.Messages = nil, nil
	}
}

// MessageView is one message of a GetMessageResult: a view of its record
// in the CommitLog (memory-mapped on a directory store), valid until the
// result is released.
type MessageView struct {
	// Record is the whole CommitLog record (DecodeMessage or
	// MessageView.Decode decode it).
	Record          []byte
	CommitLogOffset int64
	QueueOffset     int64
	TagsCode        int64
}

// Decode decodes the viewed record into a MessageExt that owns its memory
// and stays valid after Release.
func (v MessageView) Decode() (*MessageExt, error) { return DecodeMessage(v.Record) }

// Health is a snapshot of the store's running state and fault counters.
type Health struct {
	// Writable is false while puts are refused; Reason says why.
	Writable bool
	Reason   error
	// DiskFull, DispatchFailing and FlushFailed are the running flags.
	// The first two clear by themselves; FlushFailed is final (a failed
	// sync may have lost data for good: reopen the store).
	DiskFull, DispatchFailing, FlushFailed bool
	// DiskFullErrors, DispatchErrors and FlushErrors count failures
	// since Open: ENOSPC on file creation, failed dispatch passes (each
	// retry counts), failed syncs.
	DiskFullErrors, DispatchErrors, FlushErrors int64
	// DamagedRecords counts the damaged CommitLog records recovery
	// skipped (see RecoveryReport.Damaged) and that are not repaired
	// since (a replicated group repairs them from a replica; see package
	// cluster).
	DamagedRecords int
	// PageReleaseErrors counts flushes whose release of the written
	// pages' mapping (before the sync, to spare the writeback a TLB
	// shootdown per page) failed. Each is logged; the sync still writes
	// every byte, so the store stays writable.
	PageReleaseErrors int64
}

// Health returns the store's running state and fault counters.
func (s *Store) Health() Health { return Health(s.s.Health()) }

// RecoveryReport says what Open found and did.
type RecoveryReport struct {
	// Abnormal is set when the abort marker was present: the store was not
	// closed cleanly (crash, kill, power cut).
	Abnormal bool
	// CheckpointValid is false when the checkpoint was missing or garbage;
	// recovery then replays the CommitLog from its first file.
	CheckpointValid bool
	// ScanFrom is the CommitLog offset recovery started checking records at.
	ScanFrom int64
	// CommitLogEnd is the recovered end of the CommitLog.
	CommitLogEnd int64
	// StopReason says why the scan stopped at CommitLogEnd: nil for the
	// clean end of the data (zero bytes), else the first bad record.
	StopReason error
	// DroppedBytes counts the non-zero bytes past CommitLogEnd that were
	// zeroed (a torn or corrupt tail).
	DroppedBytes int
	// Redispatched counts records replayed into the ConsumeQueues.
	Redispatched int
	// PaddedFiles lists last files that were shorter than the file size
	// (truncated) and were padded with zeros before recovery.
	PaddedFiles []string
	// ConsumeQueuesRebuilt is set when the ConsumeQueues were inconsistent
	// with the CommitLog and were rebuilt from it entirely.
	ConsumeQueuesRebuilt bool
	// Damaged lists the damaged CommitLog ranges that recovery kept in
	// place and skipped (nothing in them is dispatched) because intact
	// records follow them.
	Damaged []DamagedRange
	// TruncatedAtDamage is set when recovery could not tell damage from a
	// torn tail and, as the config allowed, cut the CommitLog there.
	TruncatedAtDamage bool
}

// DamagedRange is a stretch of the CommitLog that recovery found damaged (a
// record failing its checks) with intact records after it. The bytes stay
// on disk for inspection; GetMessage never returns them.
type DamagedRange struct {
	// File is the CommitLog file holding the start of the range.
	File string
	// Offset is the CommitLog offset of the damaged record; End the
	// offset of the next intact record (or file) after it.
	Offset, End int64
	// Reason is the check the record failed.
	Reason error
}

// Recovery returns what Open's recovery found and did.
func (s *Store) Recovery() RecoveryReport {
	r := s.s.Recovery()
	out := RecoveryReport{Abnormal: r.Abnormal, CheckpointValid: r.CheckpointValid, ScanFrom: r.ScanFrom,
		CommitLogEnd: r.CommitLogEnd, StopReason: r.StopReason, DroppedBytes: r.DroppedBytes,
		Redispatched: r.Redispatched, PaddedFiles: r.PaddedFiles, ConsumeQueuesRebuilt: r.ConsumeQueuesRebuilt,
		TruncatedAtDamage: r.TruncatedAtDamage}
	for _, d := range r.Damaged {
		out.Damaged = append(out.Damaged, DamagedRange(d))
	}
	return out
}

// RetentionReport says what a retention round did (DeleteExpiredFiles).
type RetentionReport struct {
	// CommitLogFiles and ConsumeQueueFiles count the files deleted.
	CommitLogFiles    int
	ConsumeQueueFiles int
	// MinOffset is the CommitLog's minimum offset afterwards.
	MinOffset int64
}
