package record

import (
	"fmt"
	"strings"
)

// Batch copies the records of one read (a pop receive's messages) into
// messages that share their memory: one block holds their MessageExt
// structs, one string their property names and values, and the messages
// of one topic share its name. A message costs its body and its
// properties map instead of some eight allocations; in exchange a
// message kept alive keeps its batch's shared blocks alive.
//
// Add checks each record as Decode(rec, -1, false) does and copies it;
// Messages then returns what Decode would have returned for each, field
// for field. The zero Batch is ready, and may be used again after
// Messages or Reset.
type Batch struct {
	// exts holds the queued messages (all but their properties), at the
	// start of a block no message handed out is in.
	exts []MessageExt
	// props holds the queued messages' properties, plens their lengths.
	props []byte
	plens []int
	topic string
}

// Grow makes room for n more messages in the block of the queued ones.
func (b *Batch) Grow(n int) {
	if n > cap(b.exts)-len(b.exts) {
		exts := make([]MessageExt, len(b.exts), len(b.exts)+n)
		copy(exts, b.exts)
		b.exts = exts
	}
}

// Add checks the record at the start of rec without its position checks
// (Decode(rec, -1, false)) and queues its copy; a record that does not
// check is refused, with Decode's error, and not queued.
func (b *Batch) Add(rec []byte) error {
	r, err := Check(rec, -1, false)
	if err != nil {
		return err
	}
	if r.Blank {
		return fmt.Errorf("%w: blank record where a message was expected", ErrCorrupt)
	}
	if len(b.exts) == cap(b.exts) {
		b.Grow(max(len(b.exts), 16))
	}
	b.exts = b.exts[:len(b.exts)+1]
	// Field by field into the zeroed slot: a composite literal would be
	// copied in whole, its pointers' write barriers with it.
	m := &b.exts[len(b.exts)-1]
	if string(r.Topic) != b.topic {
		b.topic = string(r.Topic)
	}
	m.Topic = b.topic
	m.QueueID = r.QueueID
	m.Flag = r.Flag
	if len(r.Body) > 0 {
		// Each its own: a block of bodies would be a large object (over
		// 32 KiB) for a batch of 1 KiB messages, which the runtime
		// allocates and frees at a higher cost than 32 small ones.
		m.Body = append([]byte(nil), r.Body...)
	}
	m.SysFlag = r.SysFlag
	m.BornTimestamp = r.BornTimestamp
	m.BornHost = parseHost(r.BornHost)
	m.ReconsumeTimes = r.ReconsumeTimes
	m.PreparedTransactionOffset = r.PreparedTransactionOffset
	m.StoreSize = r.Size
	m.BodyCRC = r.BodyCRC
	m.QueueOffset = r.QueueOffset
	m.CommitLogOffset = r.PhysicalOffset
	m.StoreTimestamp = r.StoreTimestamp
	m.StoreHost = parseHost(r.StoreHost)
	b.props = append(b.props, r.Properties...)
	b.plens = append(b.plens, len(r.Properties))
	return nil
}

// Reset drops the queued messages.
func (b *Batch) Reset() {
	clear(b.exts)
	b.exts, b.props, b.plens = b.exts[:0], b.props[:0], b.plens[:0]
}

// Len is the number of messages queued.
func (b *Batch) Len() int { return len(b.exts) }

// Messages appends the queued messages to dst, in the order they were
// added, and empties the batch: its next messages go to a new block.
func (b *Batch) Messages(dst []*MessageExt) []*MessageExt {
	if len(b.exts) == 0 {
		return dst
	}
	props := string(b.props)
	for i := range b.exts {
		m := &b.exts[i]
		var p string
		p, props = props[:b.plens[i]], props[b.plens[i]:]
		m.Properties = parsePropertiesString(p)
		dst = append(dst, m)
	}
	b.exts, b.props, b.plens = nil, b.props[:0], b.plens[:0]
	return dst
}

// parsePropertiesString is ParseProperties of s, with the names and
// values parts of s (ForEachProperty's reading, on a string).
func parsePropertiesString(s string) map[string]string {
	m := make(map[string]string, 4)
	for len(s) > 0 {
		item := s
		if i := strings.IndexByte(s, propertySeparator); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if len(item) < 3 {
			continue
		}
		kv := strings.IndexByte(item, nameValueSeparator)
		if kv <= 0 || kv >= len(item)-1 {
			continue
		}
		m[item[:kv]] = item[kv+1:]
	}
	return m
}
