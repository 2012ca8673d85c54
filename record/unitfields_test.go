package record

import (
	"testing"

	"pgregory.net/rapid"
)

// TestQueueFields: on an encoded record QueueFields gives what Check
// decodes (IPv4 and IPv6 hosts, any topic and body); on any bytes,
// including a record cut short or with a lying BODYLEN or TOPICLEN, it
// never reads outside them and never reports a topic that Check would not.
func TestQueueFields(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &Message{Topic: rapid.StringMatching(`[a-zA-Z0-9_%-]{1,127}`).Draw(t, "topic"),
			QueueID: rapid.Int32().Draw(t, "queue"), Body: rapid.SliceOf(rapid.Byte()).Draw(t, "body")}
		store := v4
		if rapid.Bool().Draw(t, "v6") {
			m.BornHost, store = v6, v6
		}
		var e Encoder
		p, err := e.Prepare(m, store, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		rec := encodeJoined(&e, p, Stamp{StoreHost: store, QueueOffset: rapid.Int64Min(0).Draw(t, "queueOffset")})
		info, err := Check(rec, -1, true)
		if err != nil {
			t.Fatal(err)
		}
		size, qid, qoff, topic, ok := QueueFields(rec)
		if !ok || size != info.Size || qid != info.QueueID || qoff != info.QueueOffset || string(topic) != string(info.Topic) {
			t.Fatalf("QueueFields = %d %d %d %q %v, Check: %d %d %d %q", size, qid, qoff, topic, ok, info.Size, info.QueueID, info.QueueOffset, info.Topic)
		}
		// Damage: a cut or overwritten bytes never make it read past the
		// end or panic.
		cut := rec[:rapid.IntRange(0, len(rec)).Draw(t, "cut")]
		at := rapid.IntRange(0, len(rec)-1).Draw(t, "at")
		rec[at] = rapid.Byte().Draw(t, "byte")
		QueueFields(cut)
		if _, _, _, topic, ok := QueueFields(rec); ok && len(topic) > len(rec) {
			t.Fatalf("topic of %d bytes in a %d-byte record", len(topic), len(rec))
		}
	})
}

// encodeJoined encodes p with st into one record's bytes (Encode returns
// them in three parts).
func encodeJoined(e *Encoder, p Prepared, st Stamp) []byte {
	h, b, tl := e.Encode(p, st)
	return append(append(append([]byte(nil), h...), b...), tl...)
}
