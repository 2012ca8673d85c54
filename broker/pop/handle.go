package pop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadHandle marks a receipt handle that does not parse.
var ErrBadHandle = errors.New("pop: malformed receipt handle")

// Handle is a receipt handle: it names one delivery of one message. Its
// text form is RocketMQ 5.x's ReceiptHandle (ExtraInfoUtil's eight fields
// and the CommitLog offset), separated by spaces:
//
//	ckQueueOffset popTime invisibleTime reviveQueueId topicType brokerName queueId queueOffset commitLogOffset
//
// CkOffset is the revive-queue offset of the record that made the
// delivery, so that a handle of an earlier delivery of the same message
// is recognised as stale. ParseHandle also takes the eight-field form
// (CommitLogOffset -1), as RocketMQ does.
type Handle struct {
	CkOffset      int64
	PopTime       int64 // ms since the epoch
	InvisibleTime int64 // ms
	ReviveQueueID int32
	// TopicType is RocketMQ's: "0" a normal topic ("1", "2": retry
	// topics, which this broker does not deliver through pop).
	TopicType       string
	BrokerName      string
	QueueID         int32
	Offset          int64
	CommitLogOffset int64
}

// String returns the handle's text form.
func (h Handle) String() string {
	b := make([]byte, 0, 64+len(h.BrokerName))
	b = strconv.AppendInt(b, h.CkOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.PopTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.InvisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h.ReviveQueueID), 10)
	b = append(b, ' ')
	b = append(b, h.TopicType...)
	b = append(b, ' ')
	b = append(b, h.BrokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h.QueueID), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.Offset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.CommitLogOffset, 10)
	return string(b)
}

// Deadline is when the delivery's invisible time ends (ms).
func (h Handle) Deadline() int64 { return h.PopTime + h.InvisibleTime }

// ParseHandle parses a handle's text form (eight or nine fields).
func ParseHandle(s string) (Handle, error) {
	f := [9]string{8: "-1"}
	rest, n := s, 0
	for ; n < len(f) && rest != ""; n++ {
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			f[n], rest = rest, ""
			continue
		}
		if n == len(f)-1 {
			return Handle{}, fmt.Errorf("%w: more than 9 fields in %q", ErrBadHandle, s)
		}
		f[n], rest = rest[:sp], rest[sp+1:]
	}
	if n < 8 {
		return Handle{}, fmt.Errorf("%w: %d fields in %q, want 8 or 9", ErrBadHandle, n, s)
	}
	var h Handle
	var bad []string
	num := func(name, v string, bits int) int64 {
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			bad = append(bad, name+" "+strconv.Quote(v))
		}
		return n
	}
	h.CkOffset = num("ckQueueOffset", f[0], 64)
	h.PopTime = num("popTime", f[1], 64)
	h.InvisibleTime = num("invisibleTime", f[2], 64)
	h.ReviveQueueID = int32(num("reviveQueueId", f[3], 32))
	h.TopicType, h.BrokerName = f[4], f[5]
	h.QueueID = int32(num("queueId", f[6], 32))
	h.Offset = num("queueOffset", f[7], 64)
	h.CommitLogOffset = num("commitLogOffset", f[8], 64)
	if len(bad) > 0 {
		return Handle{}, fmt.Errorf("%w: %s in %q", ErrBadHandle, strings.Join(bad, ", "), s)
	}
	return h, nil
}
