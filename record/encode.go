package record

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
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
	// RocketMQ's encoding (k\x01v\x02k\x01v, see AppendProperties), as a
	// client sent them: the store writes them as they are, without
	// building or sorting a map (RocketMQ keeps the client's string too),
	// and Properties is not read. A broker sets this; a library user may
	// set either.
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

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropertyTags) }

// Keys returns the KEYS property.
func (m *Message) Keys() string { return m.Property(PropertyKeys) }

// Property returns the value of the property key, from EncodedProperties
// when set, else from Properties ("" when absent).
func (m *Message) Property(key string) string {
	if m.EncodedProperties == nil {
		return m.Properties[key]
	}
	v, _ := PropertyValue(m.EncodedProperties, key)
	return string(v)
}

// PropertyIs reports whether the property key is present with the value
// v. It does not allocate.
func (m *Message) PropertyIs(key, v string) bool {
	if m.EncodedProperties == nil {
		got, ok := m.Properties[key]
		return ok && got == v
	}
	got, ok := PropertyValue(m.EncodedProperties, key)
	return ok && string(got) == v
}

// HasProperty reports whether the property key has a non-empty value. It
// does not allocate.
func (m *Message) HasProperty(key string) bool {
	if m.EncodedProperties == nil {
		return m.Properties[key] != ""
	}
	v, _ := PropertyValue(m.EncodedProperties, key)
	return len(v) > 0
}

// AppendEncodedProperties appends m's properties as the store writes
// them: EncodedProperties as they are, else Properties in key order.
func (m *Message) AppendEncodedProperties(dst []byte) []byte {
	if m.EncodedProperties != nil {
		return append(dst, m.EncodedProperties...)
	}
	return AppendProperties(dst, m.Properties)
}

// Stamp holds the fields the store assigns under its put lock.
type Stamp struct {
	QueueOffset    int64
	PhysicalOffset int64
	StoreTimestamp int64
	StoreHost      netip.AddrPort
}

// Encoder encodes messages without allocating once its buffers have grown.
// It is not safe for concurrent use: the CommitLog owns one under its lock.
type Encoder struct {
	props []byte
	head  []byte
}

// Prepared is a message that passed validation and whose properties are
// encoded; its Size is final.
type Prepared struct {
	msg     *Message
	sysFlag int32
	props   []byte
	crc     int32 // computed by Prepare, so that it can run outside a lock
	Size    int
}

// Prepare validates m against maxBodySize and the format's limits and encodes
// its properties. Topics, property names and property values must not
// contain a NUL byte (RocketMQ properties are strings, where NUL means
// nothing): recovery recognises a torn sector by its zeros. The result is
// valid until the next Prepare on e (and aliases m.EncodedProperties).
func (e *Encoder) Prepare(m *Message, storeHost netip.AddrPort, maxBodySize int) (Prepared, error) {
	if len(m.Topic) == 0 {
		return Prepared{}, fmt.Errorf("%w: empty topic", ErrMessageIllegal)
	}
	if len(m.Topic) > MaxTopicLength {
		return Prepared{}, fmt.Errorf("%w: %d bytes, max %d", ErrTopicTooLong, len(m.Topic), MaxTopicLength)
	}
	if len(m.Body) > maxBodySize {
		return Prepared{}, fmt.Errorf("%w: body %d bytes, max %d", ErrMessageTooLarge, len(m.Body), maxBodySize)
	}
	if strings.IndexByte(m.Topic, 0) >= 0 {
		return Prepared{}, fmt.Errorf("%w: NUL byte in topic", ErrMessageIllegal)
	}
	props := m.EncodedProperties
	if props == nil {
		e.props = AppendProperties(e.props[:0], m.Properties)
		props = e.props
	}
	if bytes.IndexByte(props, 0) >= 0 {
		// Recovery tells a torn sector by its zeros (see Check).
		return Prepared{}, fmt.Errorf("%w: NUL byte in a property name or value", ErrMessageIllegal)
	}
	if len(props) > MaxPropertiesLength {
		return Prepared{}, fmt.Errorf("%w: %d bytes, max %d", ErrPropertiesTooLarge, len(props), MaxPropertiesLength)
	}
	sys := m.SysFlag &^ (FlagBornHostV6 | FlagStoreHostV6)
	if isV6(m.BornHost.Addr()) {
		sys |= FlagBornHostV6
	}
	if isV6(storeHost.Addr()) {
		sys |= FlagStoreHostV6
	}
	size := Length(sys, len(m.Body), len(m.Topic), len(props))
	// RocketMQ >= 4.9.5 also bounds the whole record.
	if size > maxBodySize+64*1024 {
		return Prepared{}, fmt.Errorf("%w: record %d bytes, max %d", ErrMessageTooLarge, size, maxBodySize+64*1024)
	}
	return Prepared{msg: m, sysFlag: sys, props: props, crc: BodyCRC(m.Body), Size: size}, nil
}

// Encode returns the record for p in up to three pieces that together are
// exactly p.Size bytes: a header (up to and including BODYLEN), the body
// (the caller's slice, not copied) and the tail (topic and properties).
// Small records come back whole in head. head and tail are valid until the
// next call on e.
func (e *Encoder) Encode(p Prepared, s Stamp) (head, body, tail []byte) {
	m := p.msg
	if cap(e.head) < p.Size && p.Size <= smallRecord {
		e.head = make([]byte, 0, smallRecord)
	}
	b := e.head[:0]
	b = be.AppendUint32(b, uint32(p.Size))
	b = be.AppendUint32(b, magicMessageBits)
	b = be.AppendUint32(b, uint32(p.crc))
	b = be.AppendUint32(b, uint32(m.QueueID))
	b = be.AppendUint32(b, uint32(m.Flag))
	b = be.AppendUint64(b, uint64(s.QueueOffset))
	b = be.AppendUint64(b, uint64(s.PhysicalOffset))
	b = be.AppendUint32(b, uint32(p.sysFlag))
	born := m.BornTimestamp
	if born == 0 {
		born = s.StoreTimestamp
	}
	b = be.AppendUint64(b, uint64(born))
	b = appendHost(b, m.BornHost)
	b = be.AppendUint64(b, uint64(s.StoreTimestamp))
	b = appendHost(b, s.StoreHost)
	b = be.AppendUint32(b, uint32(m.ReconsumeTimes))
	b = be.AppendUint64(b, uint64(m.PreparedTransactionOffset))
	b = be.AppendUint32(b, uint32(len(m.Body)))
	if p.Size <= smallRecord {
		// One contiguous write is cheaper than three for small records.
		b = append(b, m.Body...)
		b = appendTail(b, m.Topic, p.props)
		e.head = b
		return b, nil, nil
	}
	h := len(b)
	b = appendTail(b, m.Topic, p.props)
	e.head = b
	return b[:h], m.Body, b[h:]
}

// smallRecord is the size up to which a record is assembled in one buffer.
const smallRecord = 4096

func appendTail(b []byte, topic string, props []byte) []byte {
	b = append(b, byte(len(topic)))
	b = append(b, topic...)
	b = be.AppendUint16(b, uint16(len(props)))
	return append(b, props...)
}

func isV6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }

func appendHost(b []byte, h netip.AddrPort) []byte {
	a := h.Addr()
	switch {
	case isV6(a):
		a16 := a.As16()
		b = append(b, a16[:]...)
	case a.IsValid():
		a4 := a.Unmap().As4()
		b = append(b, a4[:]...)
	default:
		b = append(b, 0, 0, 0, 0)
	}
	return be.AppendUint32(b, uint32(h.Port()))
}

// AppendMessageExt appends m in the v1 CommitLog record format, as a pull
// body carries it: re-encoding a decoded record gives back its bytes.
func AppendMessageExt(dst []byte, m *MessageExt) ([]byte, error) {
	var enc Encoder
	p, err := enc.Prepare(&m.Message, m.StoreHost, len(m.Body))
	if err != nil {
		return dst, err
	}
	head, body, tail := enc.Encode(p, Stamp{QueueOffset: m.QueueOffset,
		PhysicalOffset: m.CommitLogOffset, StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost})
	return append(append(append(dst, head...), body...), tail...), nil
}
