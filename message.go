package rocketstore

import (
	"net/netip"

	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Message is what a producer hands to the store. The store fills in the
// queue offset, physical offset, store time, store host and body CRC.
type Message struct {
	// Topic is at most MaxTopicLength bytes.
	Topic string
	// QueueID selects the ConsumeQueue within the topic.
	QueueID int32
	// Flag is an opaque user flag, stored as is.
	Flag int32
	// Body is the payload.
	Body []byte
	// Properties holds user and system properties (TAGS, KEYS, UNIQ_KEY,
	// DELAY, ...). They are encoded in key order so that the same message
	// always gives the same bytes. Ignored when EncodedProperties is set.
	Properties map[string]string
	// EncodedProperties, when not nil, are the properties already in
	// RocketMQ's encoding (k\x01v\x02k\x01v), as a client sent them: the
	// store writes them as they are, without building or sorting a map,
	// and Properties is not read.
	EncodedProperties []byte
	// SysFlag carries the transaction type and the compression bits. The
	// IPv6 host bits are set by the encoder from the host addresses.
	SysFlag int32
	// BornTimestamp is the producer's time in milliseconds; 0 means the
	// store time.
	BornTimestamp int64
	// BornHost is the producer's address; the zero value is encoded as
	// 0.0.0.0:0.
	BornHost netip.AddrPort
	// ReconsumeTimes counts redeliveries (set by send-back).
	ReconsumeTimes int32
	// PreparedTransactionOffset is the offset of a half message for
	// commit/rollback records; 0 otherwise.
	PreparedTransactionOffset int64
}

// Keys returns the KEYS property.
func (m *Message) Keys() string { return (*record.Message)(m).Keys() }

// Tags returns the TAGS property.
func (m *Message) Tags() string { return (*record.Message)(m).Tags() }

// MessageExt is a stored message, decoded; it owns its memory.
type MessageExt struct {
	Message
	// StoreSize is the record's size in the CommitLog (TOTALSIZE).
	StoreSize int32
	// BodyCRC is the CRC32 of the body as stored.
	BodyCRC int32
	// QueueOffset is the message's index in its ConsumeQueue.
	QueueOffset int64
	// CommitLogOffset is the record's position in the CommitLog.
	CommitLogOffset int64
	// StoreTimestamp is the store time in milliseconds.
	StoreTimestamp int64
	// StoreHost is the address of the store that wrote the record.
	StoreHost netip.AddrPort
}

// MsgID returns the offset message id (store host + CommitLog offset), as
// LookMessageByMsgID takes it.
func (m *MessageExt) MsgID() string { return record.OffsetMsgID(m.StoreHost, m.CommitLogOffset) }

// messageExt converts a decoded engine message.
func messageExt(m *engine.MessageExt) *MessageExt {
	return &MessageExt{Message: Message(m.Message), StoreSize: m.StoreSize, BodyCRC: m.BodyCRC,
		QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, StoreTimestamp: m.StoreTimestamp,
		StoreHost: m.StoreHost}
}

// DecodeMessage decodes one record returned by GetMessage
// (MessageView.Record); the result owns its memory.
func DecodeMessage(rec []byte) (*MessageExt, error) {
	m, err := record.Decode(rec, -1, false)
	if err != nil {
		return nil, err
	}
	return messageExt(m), nil
}

// PutResult describes a stored message (or batch).
type PutResult struct {
	// WroteOffset is the CommitLog offset of the (first) record.
	WroteOffset int64
	// WroteBytes is the size of the record(s).
	WroteBytes int32
	// QueueOffset is the ConsumeQueue index of the (first) message.
	QueueOffset int64
	// MsgNum is the number of messages stored.
	MsgNum int32
	// StoreTimestamp is the time assigned under the put lock.
	StoreTimestamp int64
	// StoreHost is the host written into the record.
	StoreHost netip.AddrPort
	// Topic and QueueID are where the message was stored: for a delayed
	// message, the schedule topic and its queue.
	Topic   string
	QueueID int32
}

// MsgID returns the offset message id of the (first) record.
func (r PutResult) MsgID() string { return engine.PutResult(r).MsgID() }

// Dispatcher receives every stored record in CommitLog order, after the
// store has built its ConsumeQueue unit (pass it to Open with
// WithDispatcher, e.g. to build an index of your own). It must be
// idempotent (recovery replays records) and must not keep req's slices
// after returning; an error makes the store retry the record and report
// it in Health. It runs on the store's reput goroutine or, with SyncFlush,
// on the goroutine of the Put that led the group commit, before that Put
// returns; so it must be quick and must not call the Store's methods that
// write or close (Put, PutBatch, DeleteTopic, Close).
type Dispatcher interface {
	Dispatch(req *DispatchRequest) error
}

// DispatchRequest is one record to dispatch (RocketMQ's DispatchRequest).
// Its byte slices alias the CommitLog and are valid only during Dispatch;
// copy what must outlive the call.
type DispatchRequest struct {
	// Topic and QueueID name the record's ConsumeQueue.
	Topic   []byte
	QueueID int32
	// CommitLogOffset and MsgSize locate the record in the CommitLog.
	CommitLogOffset int64
	MsgSize         int32
	// TagsCode is the hash of the TAGS property (as in the ConsumeQueue
	// unit); for a delayed message, its deliver time.
	TagsCode int64
	// StoreTimestamp is the store time in milliseconds.
	StoreTimestamp int64
	// ConsumeQueueOffset is the record's index in its ConsumeQueue.
	ConsumeQueueOffset int64
	// SysFlag carries the transaction type and the compression bits.
	SysFlag int32
	// PreparedTransactionOffset is the half message's offset for a commit
	// or rollback record; 0 otherwise.
	PreparedTransactionOffset int64
	// Keys is the KEYS property (space-separated), UniqKey UNIQ_KEY.
	Keys    []byte
	UniqKey []byte
	// Properties is the encoded property string (key, 0x01,
	// value, 0x02, ...).
	Properties []byte
}

// Dispatchable reports whether the record belongs in a ConsumeQueue:
// prepared and rolled-back transaction records do not.
func (r *DispatchRequest) Dispatchable() bool { return (*dispatch.Request)(r).Dispatchable() }

// dispatcher adapts a Dispatcher to the engine's (the request types share
// their layout, so the conversion copies nothing).
type dispatcher struct{ d Dispatcher }

func (a dispatcher) Dispatch(req *dispatch.Request) error {
	return a.d.Dispatch((*DispatchRequest)(req))
}
