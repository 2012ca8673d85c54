package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Entry layout (the Data of a raft.LogCommand; integers big-endian):
//
//	0 KIND uint8 | 1 payload
//
//	kindPut, kindBatch: STORETIMESTAMP int64 | STOREHOST str | COUNT uint32 | COUNT × message
//	message: TOPIC str | QUEUEID int32 | FLAG int32 | SYSFLAG int32 | BORNTIMESTAMP int64 |
//	         BORNHOST str | RECONSUMETIMES int32 | PREPAREDTXOFFSET int64 | PROPERTIES bytes | BODY bytes
//	kindMulti: COUNT uint32 | COUNT × (LENGTH uint32 | a kindPut or kindBatch entry)
//	kindState, kindGroup: JSON
//
// where str and bytes are a uint32 length and the bytes. A put entry holds
// one message, a batch entry the messages of one SEND_BATCH_MESSAGE, a
// multi entry the put and batch entries of the sends the leader proposed
// in one round (proposer.go); each is applied as if it were its own entry.
const (
	kindPut   byte = 1
	kindBatch byte = 2
	kindState byte = 3
	kindGroup byte = 4
	kindMulti byte = 6
)

// ErrBadEntry reports a log entry that does not decode.
var ErrBadEntry = errors.New("cluster: bad log entry")

// putEntry is the messages of one put, with the origin the leader gave.
type putEntry struct {
	origin engineops.Origin
	msgs   []*engine.Message
}

// stateEntry is the leader's consumer offsets, delay offsets and topics.
type stateEntry struct {
	// From is the proposing node, which does not apply its own entry.
	From string `json:"from,omitempty"`
	// Term is the term in which From became writable, after applying
	// every earlier entry. Replicas drop the entry when it was committed
	// in another term: From lost the lead meanwhile and won it back
	// before it noticed (watchLeadership runs behind Raft), so its
	// tables may lack a deletion another leader committed in between,
	// and applying them would bring the deleted topic or group back on
	// the replicas alone. Zero (entries written before the field) is
	// applied as before.
	Term uint64 `json:"term,omitempty"`
	// ConsumerOffsets maps "topic@group" to queue → offset, as
	// consumerOffset.json does.
	ConsumerOffsets map[string]map[int32]int64    `json:"consumerOffsets"`
	DelayOffsets    map[int]int64                 `json:"delayOffsets,omitempty"`
	Topics          map[string]config.TopicConfig `json:"topics,omitempty"`
	// Groups are the subscription groups, DeletedTopics the store's
	// deleted-topic record (see deletes.go).
	Groups        map[string]config.SubscriptionGroupConfig `json:"groups"`
	DeletedTopics map[string]int64                          `json:"deletedTopics,omitempty"`
}

// groupEntry is the group's identity, proposed once by its first leader;
// every replica checks it against its own store and configuration.
type groupEntry struct {
	GroupID           string   `json:"groupId"`
	BrokerName        string   `json:"brokerName"`
	CommitLogFileSize int64    `json:"commitLogFileSize"`
	Peers             []string `json:"peers"`
}

func encodePut(kind byte, e *putEntry) []byte {
	n := 64
	for _, m := range e.msgs {
		n += 64 + len(m.Topic) + len(m.Body) + 16*len(m.Properties) + len(m.EncodedProperties)
	}
	b := make([]byte, 0, n)
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, uint64(e.origin.StoreTimestamp))
	b = appendAddr(b, e.origin.StoreHost)
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.msgs)))
	for _, m := range e.msgs {
		b = appendStr(b, m.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(m.QueueID))
		b = binary.BigEndian.AppendUint32(b, uint32(m.Flag))
		b = binary.BigEndian.AppendUint32(b, uint32(m.SysFlag))
		b = binary.BigEndian.AppendUint64(b, uint64(m.BornTimestamp))
		b = appendAddr(b, m.BornHost)
		b = binary.BigEndian.AppendUint32(b, uint32(m.ReconsumeTimes))
		b = binary.BigEndian.AppendUint64(b, uint64(m.PreparedTransactionOffset))
		// PROPERTIES encoded in place: its length is filled in after.
		at := len(b)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = m.AppendEncodedProperties(b)
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Body)))
		b = append(b, m.Body...)
	}
	return b
}

// appendAddr writes an address as text; the zero address as "".
func appendAddr(b []byte, a netip.AddrPort) []byte {
	if !a.IsValid() {
		return appendStr(b, "")
	}
	return appendStr(b, a.String())
}

func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// reader decodes an entry; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", ErrBadEntry, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u32() uint32 {
	if v := r.need(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.need(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *reader) bytes() []byte { return r.need(int(r.u32())) }

func (r *reader) addr() netip.AddrPort {
	s := string(r.bytes())
	if r.err != nil || s == "" {
		return netip.AddrPort{}
	}
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		r.err = fmt.Errorf("%w: address %q: %v", ErrBadEntry, s, err)
	}
	return a
}

// decodePut decodes a put or batch entry (after its kind byte). The
// messages' bodies alias data.
func decodePut(data []byte) (*putEntry, error) {
	r := &reader{b: data}
	e := &putEntry{}
	e.origin.StoreTimestamp = int64(r.u64())
	e.origin.StoreHost = r.addr()
	n := r.u32()
	if r.err == nil && int(n) > len(r.b)/32+1 {
		return nil, fmt.Errorf("%w: %d messages in %d bytes", ErrBadEntry, n, len(r.b))
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		m := &engine.Message{Topic: string(r.bytes())}
		m.QueueID = int32(r.u32())
		m.Flag = int32(r.u32())
		m.SysFlag = int32(r.u32())
		m.BornTimestamp = int64(r.u64())
		m.BornHost = r.addr()
		m.ReconsumeTimes = int32(r.u32())
		m.PreparedTransactionOffset = int64(r.u64())
		m.Properties = record.ParseProperties(r.bytes())
		m.Body = r.bytes()
		e.msgs = append(e.msgs, m)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 || len(e.msgs) == 0 {
		return nil, fmt.Errorf("%w: %d messages, %d trailing bytes", ErrBadEntry, len(e.msgs), len(r.b))
	}
	return e, nil
}

// encodeMulti encodes the round's put entries as one multi entry.
func encodeMulti(round []*proposal) []byte {
	n := 5
	for _, p := range round {
		n += 4 + len(p.data)
	}
	b := make([]byte, 0, n)
	b = append(b, kindMulti)
	b = binary.BigEndian.AppendUint32(b, uint32(len(round)))
	for _, p := range round {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.data)))
		b = append(b, p.data...)
	}
	return b
}

// decodeMulti splits a multi entry (after its kind byte) into its put
// entries, which alias data; each starts with its kind, put or batch.
func decodeMulti(data []byte) ([][]byte, error) {
	r := &reader{b: data}
	n := r.u32()
	if r.err == nil && (n == 0 || int(n) > len(r.b)/(4+minPutEntry)) {
		return nil, fmt.Errorf("%w: %d puts in a multi entry of %d bytes", ErrBadEntry, n, len(r.b))
	}
	subs := make([][]byte, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		sub := r.bytes()
		if r.err == nil && (len(sub) == 0 || (sub[0] != kindPut && sub[0] != kindBatch)) {
			return nil, fmt.Errorf("%w: put %d of a multi entry is not a put entry", ErrBadEntry, i)
		}
		subs = append(subs, sub)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after a multi entry's %d puts", ErrBadEntry, len(r.b), n)
	}
	return subs, nil
}

// minPutEntry is the size of the smallest put entry: kind, timestamp,
// an empty host, a count.
const minPutEntry = 1 + 8 + 4 + 4

func encodeJSON(kind byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte{kind}, b...), nil
}
