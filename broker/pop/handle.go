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
	// Built on the stack, so that the string is the one allocation.
	var buf [128]byte
	return string(h.appendOffsets(h.appendPrefix(buf[:0])))
}

// appendPrefix appends the text of the fields that every message of a
// receive's batch shares (all but the last two), each followed by a
// space.
func (h *Handle) appendPrefix(b []byte) []byte {
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
	return append(b, ' ')
}

// appendOffsets appends the text of the last two fields, the message's
// own: queueOffset and commitLogOffset.
func (h *Handle) appendOffsets(b []byte) []byte {
	b = strconv.AppendInt(b, h.Offset, 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, h.CommitLogOffset, 10)
}

// Deadline is when the delivery's invisible time ends (ms).
func (h Handle) Deadline() int64 { return h.PopTime + h.InvisibleTime }

// ParseHandle parses a handle's text form (eight or nine fields).
func ParseHandle(s string) (Handle, error) {
	if h, ok := parseHandleFast(s); ok {
		return h, nil
	}
	return parseHandleFields(s)
}

// handleParser parses the handles of an ack batch, which mostly come
// from one receive and then share their first seven fields (as Service.
// deliver writes them): a handle whose text starts with the previous
// parsed one's seven fields takes their values, and only its last
// fields are read. It reads what ParseHandle reads.
type handleParser struct {
	prev Handle
	// prefix is prev's text up to its queueOffset ("": none yet).
	prefix string
}

// parse is ParseHandle(s).
func (p *handleParser) parse(s string) (Handle, error) {
	if p.prefix != "" && strings.HasPrefix(s, p.prefix) {
		if h, ok := p.prev.withOffsets(s[len(p.prefix):]); ok {
			return h, nil
		}
	}
	h, err := ParseHandle(s)
	if err != nil {
		return Handle{}, err
	}
	// A parsed handle has at least seven spaces.
	end := 0
	for range 7 {
		end += strings.IndexByte(s[end:], ' ') + 1
	}
	p.prev, p.prefix = h, s[:end]
	return h, nil
}

// withOffsets returns h with the last fields read from rest, the text
// after the seventh field's space, as parseHandleFast reads them.
func (h Handle) withOffsets(rest string) (Handle, bool) {
	var ok bool
	i := 0
	if h.Offset, i, ok = scanDecimal(rest, i, 64); !ok {
		return Handle{}, false
	}
	if i == len(rest) {
		h.CommitLogOffset = -1 // eight fields
		return h, true
	}
	if !space(rest, &i) {
		return Handle{}, false
	}
	if h.CommitLogOffset, i, ok = scanDecimal(rest, i, 64); !ok || i != len(rest) {
		return Handle{}, false
	}
	return h, true
}

// parseHandleFields is ParseHandle's general path: it splits the
// fields, then reads them, naming each bad one.
func parseHandleFields(s string) (Handle, error) {
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
	ok := decimal(f[0], 64, &h.CkOffset) && decimal(f[1], 64, &h.PopTime) &&
		decimal(f[2], 64, &h.InvisibleTime) && decimal32(f[3], &h.ReviveQueueID) &&
		decimal32(f[6], &h.QueueID) && decimal(f[7], 64, &h.Offset) && decimal(f[8], 64, &h.CommitLogOffset)
	if !ok {
		return Handle{}, badNumbers(s, &f)
	}
	h.TopicType, h.BrokerName = f[4], f[5]
	return h, nil
}

// decimal sets *v to the decimal number s of bits bits and reports
// whether s is one, as strconv.ParseInt(s, 10, bits) would: without its
// error value on the path of every ack, a handle's numbers being short.
func decimal(s string, bits int, v *int64) bool {
	if len(s) == 0 || len(s) > 18 {
		n, err := strconv.ParseInt(s, 10, bits)
		*v = n
		return err == nil
	}
	neg := s[0] == '-'
	digits := s
	if neg || s[0] == '+' {
		digits = s[1:]
		if digits == "" {
			return false
		}
	}
	var u uint64 // below 10^18: no overflow
	for i := 0; i < len(digits); i++ {
		c := digits[i] - '0'
		if c > 9 {
			return false
		}
		u = u*10 + uint64(c)
	}
	if limit := uint64(1) << (bits - 1); u > limit || (u == limit && !neg) {
		return false
	}
	*v = int64(u)
	if neg {
		*v = -*v
	}
	return true
}

// decimal32 is decimal for an int32.
func decimal32(s string, v *int32) bool {
	var n int64
	ok := decimal(s, 32, &n)
	*v = int32(n)
	return ok
}

// badNumbers is the error of a handle whose fields f do not all hold
// the numbers they must: it names each bad one.
func badNumbers(s string, f *[9]string) error {
	var bad []string
	for i, name := range [...]string{0: "ckQueueOffset", 1: "popTime", 2: "invisibleTime", 3: "reviveQueueId",
		6: "queueId", 7: "queueOffset", 8: "commitLogOffset"} {
		if name == "" {
			continue // topicType, brokerName: any text
		}
		bits := 64
		if i == 3 || i == 6 {
			bits = 32
		}
		if _, err := strconv.ParseInt(f[i], 10, bits); err != nil {
			bad = append(bad, name+" "+strconv.Quote(f[i]))
		}
	}
	return fmt.Errorf("%w: %s in %q", ErrBadHandle, strings.Join(bad, ", "), s)
}

// parseHandleFast parses, in one pass, a handle as String writes it
// (numbers of at most 18 digits, single spaces, eight or nine fields),
// which is what every ack brings; ok is false for anything else, which
// ParseHandle's general path then reads or refuses.
func parseHandleFast(s string) (h Handle, ok bool) {
	i := 0
	var q int64
	if h.CkOffset, i, ok = scanDecimal(s, i, 64); !ok || !space(s, &i) {
		return Handle{}, false
	}
	if h.PopTime, i, ok = scanDecimal(s, i, 64); !ok || !space(s, &i) {
		return Handle{}, false
	}
	if h.InvisibleTime, i, ok = scanDecimal(s, i, 64); !ok || !space(s, &i) {
		return Handle{}, false
	}
	if q, i, ok = scanDecimal(s, i, 32); !ok || !space(s, &i) {
		return Handle{}, false
	}
	h.ReviveQueueID = int32(q)
	if h.TopicType, i = scanText(s, i); !space(s, &i) {
		return Handle{}, false
	}
	if h.BrokerName, i = scanText(s, i); !space(s, &i) {
		return Handle{}, false
	}
	if q, i, ok = scanDecimal(s, i, 32); !ok || !space(s, &i) {
		return Handle{}, false
	}
	h.QueueID = int32(q)
	if h.Offset, i, ok = scanDecimal(s, i, 64); !ok {
		return Handle{}, false
	}
	if i == len(s) {
		h.CommitLogOffset = -1 // eight fields
		return h, true
	}
	if !space(s, &i) {
		return Handle{}, false
	}
	if h.CommitLogOffset, i, ok = scanDecimal(s, i, 64); !ok || i != len(s) {
		return Handle{}, false
	}
	return h, true
}

// space consumes the single space at s[*i].
func space(s string, i *int) bool {
	if *i < len(s) && s[*i] == ' ' {
		*i++
		return true
	}
	return false
}

// scanText returns the text from i to the next space (or the end).
func scanText(s string, i int) (string, int) {
	j := i
	for j < len(s) && s[j] != ' ' {
		j++
	}
	return s[i:j], j
}

// scanDecimal reads an optional '-' and 1 to 18 digits from i, a
// number of bits bits, and returns it and the index after it.
func scanDecimal(s string, i, bits int) (int64, int, bool) {
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	var u uint64
	start := i
	for i < len(s) && s[i] != ' ' {
		c := s[i] - '0'
		if c > 9 || i-start == 18 {
			return 0, i, false
		}
		u = u*10 + uint64(c)
		i++
	}
	if i == start {
		return 0, i, false
	}
	if limit := uint64(1) << (bits - 1); u > limit || (u == limit && !neg) {
		return 0, i, false
	}
	if neg {
		return -int64(u), i, true
	}
	return int64(u), i, true
}
