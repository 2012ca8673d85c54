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
// text form is RocketMQ's ExtraInfoUtil layout, eight fields separated
// by spaces:
//
//	ckQueueOffset popTime invisibleTime reviveQueueId topicType brokerName queueId queueOffset
//
// CkOffset is the revive-queue offset of the record that made the
// delivery, so that a handle of an earlier delivery of the same message
// is recognised as stale.
type Handle struct {
	CkOffset      int64
	PopTime       int64 // ms since the epoch
	InvisibleTime int64 // ms
	ReviveQueueID int32
	// TopicType is RocketMQ's: "0" a normal topic ("1", "2": retry
	// topics, which this broker does not deliver through pop).
	TopicType  string
	BrokerName string
	QueueID    int32
	Offset     int64
}

// String returns the handle's text form.
func (h Handle) String() string {
	var b strings.Builder
	b.Grow(64 + len(h.BrokerName))
	for i, f := range []string{strconv.FormatInt(h.CkOffset, 10), strconv.FormatInt(h.PopTime, 10),
		strconv.FormatInt(h.InvisibleTime, 10), strconv.FormatInt(int64(h.ReviveQueueID), 10), h.TopicType,
		h.BrokerName, strconv.FormatInt(int64(h.QueueID), 10), strconv.FormatInt(h.Offset, 10)} {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	return b.String()
}

// Deadline is when the delivery's invisible time ends (ms).
func (h Handle) Deadline() int64 { return h.PopTime + h.InvisibleTime }

// ParseHandle parses a handle's text form.
func ParseHandle(s string) (Handle, error) {
	f := strings.Split(s, " ")
	if len(f) != 8 {
		return Handle{}, fmt.Errorf("%w: %d fields in %q, want 8", ErrBadHandle, len(f), s)
	}
	var h Handle
	var errs []error
	num := func(name, v string, bits int) int64 {
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q", name, v))
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
	if len(errs) > 0 {
		return Handle{}, fmt.Errorf("%w: %v in %q", ErrBadHandle, errors.Join(errs...), s)
	}
	return h, nil
}
