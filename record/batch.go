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
// Add checks each record as Decode(rec, -1, false) does; Messages then
// returns what Decode would have returned for each, field for field. The
// zero Batch is ready, and may be used again after Messages.
type Batch struct {
	infos []Info
	props int // bytes of properties in all
	topic string
}

// Add checks the record at the start of rec without its position checks
// (Decode(rec, -1, false)) and queues its copy; a record that does not
// check is refused, with Decode's error, and not queued. rec must stay
// unchanged until Messages.
func (b *Batch) Add(rec []byte) error {
	r, err := Check(rec, -1, false)
	if err != nil {
		return err
	}
	if r.Blank {
		return fmt.Errorf("%w: blank record where a message was expected", ErrCorrupt)
	}
	b.infos = append(b.infos, r)
	b.props += len(r.Properties)
	return nil
}

// Reset drops the queued records.
func (b *Batch) Reset() {
	clear(b.infos)
	b.infos, b.props = b.infos[:0], 0
}

// Len is the number of records queued.
func (b *Batch) Len() int { return len(b.infos) }

// Messages appends the copies of the queued records to dst, in the order
// they were added, and empties the batch (it keeps no reference to the
// records).
func (b *Batch) Messages(dst []*MessageExt) []*MessageExt {
	if len(b.infos) == 0 {
		return dst
	}
	exts := make([]MessageExt, len(b.infos))
	var sb strings.Builder
	sb.Grow(b.props)
	for i := range b.infos {
		sb.Write(b.infos[i].Properties)
	}
	props := sb.String()
	for i := range b.infos {
		r := &b.infos[i]
		var body []byte
		if len(r.Body) > 0 {
			// Each its own: a block of bodies would be a large object
			// (over 32 KiB) for a batch of 1 KiB messages, which the
			// runtime allocates and frees at a higher cost than 32
			// small ones.
			body = append([]byte(nil), r.Body...)
		}
		var p string
		p, props = props[:len(r.Properties)], props[len(r.Properties):]
		if string(r.Topic) != b.topic {
			b.topic = string(r.Topic)
		}
		exts[i] = MessageExt{
			Message: Message{
				Topic:                     b.topic,
				QueueID:                   r.QueueID,
				Flag:                      r.Flag,
				Body:                      body,
				Properties:                parsePropertiesString(p),
				SysFlag:                   r.SysFlag,
				BornTimestamp:             r.BornTimestamp,
				BornHost:                  parseHost(r.BornHost),
				ReconsumeTimes:            r.ReconsumeTimes,
				PreparedTransactionOffset: r.PreparedTransactionOffset,
			},
			StoreSize:       r.Size,
			BodyCRC:         r.BodyCRC,
			QueueOffset:     r.QueueOffset,
			CommitLogOffset: r.PhysicalOffset,
			StoreTimestamp:  r.StoreTimestamp,
			StoreHost:       parseHost(r.StoreHost),
		}
		dst = append(dst, &exts[i])
	}
	b.Reset()
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
