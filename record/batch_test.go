package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestBatchDecode: a Batch copies each record of a run (any topics,
// bodies, empty ones included, raw property texts with malformed pairs
// and duplicate names) to what Decode(rec, -1, false) gives, field for
// field, used fresh, again or after a Reset, its block grown or not
// (the messages of a previous use unchanged); the copies are independent (an append to
// one body or a write into it changes no other message), and a record
// that does not check is refused as Decode refuses it, and not queued.
func TestBatchDecode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "messages")
		recs := make([][]byte, n)
		for i := range recs {
			m := &Message{Topic: rapid.SampledFrom([]string{"T", "topic-b", "%RETRY%g_T"}).Draw(t, "topic"),
				QueueID: rapid.Int32().Draw(t, "queue"), Flag: rapid.Int32().Draw(t, "flag"),
				Body:              rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "body"),
				EncodedProperties: []byte(rapid.StringMatching(`([A-Z_]{0,4}\x01?[a-z ]{0,3}\x02?){0,6}`).Draw(t, "properties")),
				ReconsumeTimes:    rapid.Int32Range(0, 20).Draw(t, "reconsume"), BornTimestamp: rapid.Int64().Draw(t, "born")}
			store := v4
			if rapid.Bool().Draw(t, "v6") {
				m.BornHost, store = v6, v6
			}
			var e Encoder
			p, err := e.Prepare(m, store, 4<<20)
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = encodeJoined(&e, p, Stamp{StoreHost: store, QueueOffset: int64(i), PhysicalOffset: int64(1000 * i),
				StoreTimestamp: 7})
		}
		var bt Batch
		// A batch used before, or whose queue was dropped, starts empty.
		var before []*MessageExt
		if rapid.Bool().Draw(t, "reused") {
			if err := bt.Add(recs[0]); err != nil {
				t.Fatal(err)
			}
			before = bt.Messages(nil)
		}
		if rapid.Bool().Draw(t, "reset") {
			if err := bt.Add(recs[n-1]); err != nil {
				t.Fatal(err)
			}
			bt.Reset()
		}
		bt.Grow(rapid.IntRange(0, n+1).Draw(t, "grow"))
		for _, rec := range recs {
			if err := bt.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		if bt.Len() != n {
			t.Fatalf("Len %d after %d records", bt.Len(), n)
		}
		got := bt.Messages(nil)
		if len(got) != n || bt.Len() != 0 {
			t.Fatalf("%d messages of %d records, %d left queued", len(got), n, bt.Len())
		}
		for i, rec := range recs {
			want, err := Decode(rec, -1, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("message %d: Batch %+v, Decode %+v", i, got[i], want)
			}
		}
		if len(before) == 1 {
			if want, _ := Decode(recs[0], -1, false); !reflect.DeepEqual(before[0], want) {
				t.Fatalf("a message of the batch's previous use changed: %+v", before[0])
			}
		}
		// The copies share no bytes the caller can reach through another.
		var keep [][]byte
		for _, m := range got {
			keep = append(keep, bytes.Clone(m.Body))
		}
		victim := rapid.IntRange(0, n-1).Draw(t, "victim")
		got[victim].Body = append(got[victim].Body, 0xEE, 0xEE)
		for i := range got[victim].Body[:len(keep[victim])] {
			got[victim].Body[i] ^= 0xFF
		}
		for i, m := range got {
			if i != victim && !bytes.Equal(m.Body, keep[i]) {
				t.Fatalf("message %d's body changed with message %d's", i, victim)
			}
		}
		// Damage: what Decode refuses, Batch.Decode refuses the same way.
		bad := bytes.Clone(recs[0])
		bad[rapid.IntRange(0, len(bad)-1).Draw(t, "at")] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
		_, werr := Decode(bad, -1, false)
		gerr := bt.Add(bad)
		if (werr == nil) != (gerr == nil) || (werr != nil && (werr.Error() != gerr.Error() || bt.Len() != 0)) {
			t.Fatalf("damaged record: Decode %v, Batch.Add %v (%d queued)", werr, gerr, bt.Len())
		}
		if gerr != nil && !errors.Is(gerr, ErrCorrupt) && !errors.Is(gerr, ErrTruncated) &&
			!errors.Is(gerr, ErrUnsupportedVersion) && !errors.Is(gerr, ErrNoRecord) {
			t.Fatalf("damaged record: %v wraps no sentinel", gerr)
		}
	})
}
