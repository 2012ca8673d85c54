package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/rocketstore/rocketstore/record"
)

// op is the kind of a revive-log record.
type op byte

// Revive-log record kinds. Their tags are RocketMQ's (PopAckConstants):
// "ck" a checkpoint, "bAck" a batch ack; "cid" a change of invisible
// time and "dlq" a message moved to the dead-letter queue are ours.
const (
	opCheckpoint op = 1 // messages delivered (and, for FIFO, held back)
	opAck        op = 2 // messages acked
	opChange     op = 3 // an in-flight message's invisible time changed
	opDeadLetter op = 4 // a message stored in the group's DLQ
	opSnapStart  op = 5 // a snapshot of the whole state starts here
	opSnapshot   op = 6 // one queue's whole state
)

var opTags = map[op]string{opCheckpoint: "ck", opAck: "bAck", opChange: "cid", opDeadLetter: "dlq",
	opSnapStart: "snapStart", opSnapshot: "snap"}

// opProperties are the encoded properties of each kind's records (the
// tag), made once: a record is written at every receive and every ack.
var opProperties = func() map[op][]byte {
	m := make(map[op][]byte, len(opTags))
	for o, tag := range opTags {
		m[o] = record.AppendProperties(nil, map[string]string{record.PropertyTags: tag})
	}
	return m
}()

// logVersion is the first byte of every record body.
const logVersion = 1

// errBadRecord marks a revive-log body that does not decode.
var errBadRecord = errors.New("pop: bad revive-log record")

// logRecord is one record of the revive log: what changed for one
// group's view of one queue. Replaying the records in log order rebuilds
// the in-flight state; applying one twice changes nothing.
type logRecord struct {
	op      op
	group   string
	topic   string
	queueID int32
	// popTime is when the record was made (ms).
	popTime int64
	// start and end are the queue range a checkpoint scanned: offsets in
	// it that are not among items were filtered out (done for the group).
	start, end int64
	items      []logItem
}

// logItem is one message of a record.
type logItem struct {
	offset int64
	// attempt is the delivery attempt a checkpoint made (0: held back
	// behind an earlier message of its FIFO message group).
	attempt int32
	// deadline is when the message becomes visible again (ms).
	deadline int64
	// ck names the delivery an ack, a change or a snapshot refers to:
	// the revive queue offset of the record that made it (the receipt
	// handle's ckQueueOffset).
	ck int64
	// msgGroup is the FIFO message group (checkpoints of FIFO receives).
	msgGroup string
}

// appendTo appends the record's body to b.
func (r *logRecord) appendTo(b []byte) []byte {
	// An item usually takes 13 to 16 bytes without a message group (a
	// deadline in ms since the epoch is a 7-byte varint).
	b = slices.Grow(b, 64+len(r.group)+len(r.topic)+len(r.items)*16)
	b = append(b, logVersion, byte(r.op))
	b = appendString(b, r.group)
	b = appendString(b, r.topic)
	b = binary.AppendVarint(b, int64(r.queueID))
	b = binary.AppendVarint(b, r.popTime)
	b = binary.AppendVarint(b, r.start)
	b = binary.AppendVarint(b, r.end)
	b = binary.AppendUvarint(b, uint64(len(r.items)))
	for _, it := range r.items {
		b = binary.AppendVarint(b, it.offset)
		b = binary.AppendVarint(b, int64(it.attempt))
		b = binary.AppendVarint(b, it.deadline)
		b = binary.AppendVarint(b, it.ck)
		b = appendString(b, it.msgGroup)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a record body, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: truncated number", errBadRecord)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	if d.err != nil {
		return ""
	}
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.err = fmt.Errorf("%w: truncated string", errBadRecord)
		return ""
	}
	s := string(d.b[n : n+int(l)])
	d.b = d.b[n+int(l):]
	return s
}

func decodeRecord(b []byte) (*logRecord, error) {
	if len(b) < 2 || b[0] != logVersion {
		return nil, fmt.Errorf("%w: version %v", errBadRecord, b[:min(len(b), 1)])
	}
	r := &logRecord{op: op(b[1])}
	if _, ok := opTags[r.op]; !ok {
		return nil, fmt.Errorf("%w: kind %d", errBadRecord, b[1])
	}
	d := &decoder{b: b[2:]}
	r.group, r.topic = d.string(), d.string()
	r.queueID = int32(d.varint())
	r.popTime, r.start, r.end = d.varint(), d.varint(), d.varint()
	if d.err != nil {
		return nil, d.err
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%w: item count", errBadRecord)
	}
	d.b = d.b[k:]
	r.items = make([]logItem, n)
	for i := range r.items {
		it := &r.items[i]
		it.offset, it.attempt, it.deadline, it.ck = d.varint(), int32(d.varint()), d.varint(), d.varint()
		it.msgGroup = d.string()
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
