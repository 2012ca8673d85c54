package cluster

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
)

// TestMultiEntryRoundTrip: a multi entry splits back into the put entries
// it was made of, and every damaged form of it is refused with
// ErrBadEntry, never a panic.
func TestMultiEntryRoundTrip(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	var round []*proposal
	for i, kind := range []byte{kindPut, kindBatch, kindPut} {
		msgs := []*engine.Message{{Topic: "T", QueueID: int32(i), Body: []byte{byte(i), 1, 2}}}
		if kind == kindBatch {
			msgs = append(msgs, &engine.Message{Topic: "T", QueueID: int32(i), Body: []byte("second")})
		}
		p := &proposal{data: encodePut(kind, &putEntry{origin: engineops.Origin{StoreHost: host}, msgs: msgs})}
		putTimestamp(p.data, 1700000000000+int64(i))
		round = append(round, p)
	}
	data := encodeMulti(round)
	if data[0] != kindMulti {
		t.Fatalf("kind %d", data[0])
	}
	subs, err := decodeMulti(data[1:])
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != len(round) {
		t.Fatalf("%d puts, want %d", len(subs), len(round))
	}
	for i, sub := range subs {
		if string(sub) != string(round[i].data) {
			t.Fatalf("put %d differs", i)
		}
		e, err := decodePut(sub[1:])
		if err != nil || e.origin.StoreTimestamp != 1700000000000+int64(i) || e.msgs[0].QueueID != int32(i) {
			t.Fatalf("put %d: %+v %v", i, e, err)
		}
	}
	bad := map[string][]byte{
		"empty":     {},
		"no puts":   {0, 0, 0, 0},
		"truncated": data[1 : len(data)-3],
		"trailing":  append(append([]byte{}, data[1:]...), 7),
		"huge count": func() []byte {
			b := append([]byte{}, data[1:]...)
			binary.BigEndian.PutUint32(b, 1<<30)
			return b
		}(),
		"not a put": func() []byte {
			b := append([]byte{}, data[1:]...)
			b[4+4] = kindState // the first put's kind byte
			return b
		}(),
		"huge length": func() []byte {
			b := append([]byte{}, data[1:]...)
			binary.BigEndian.PutUint32(b[4:], 1<<31)
			return b
		}(),
	}
	for name, b := range bad {
		if _, err := decodeMulti(b); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: err %v, want ErrBadEntry", name, err)
		}
	}
}
