package record

import (
	"bytes"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

var (
	v4 = netip.MustParseAddrPort("10.1.30.38:8123")
	v6 = netip.MustParseAddrPort("[2001:db8::1]:10911")
)

// encode encodes m at physical offset pos and joins the pieces.
func encode(t *testing.T, m *Message, store netip.AddrPort, s Stamp) []byte {
	t.Helper()
	var e Encoder
	p, err := e.Prepare(m, store, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.StoreHost = store
	head, body, tail := e.Encode(p, s)
	rec := append(append(append([]byte(nil), head...), body...), tail...)
	if len(rec) != p.Size {
		t.Fatalf("pieces add up to %d, Prepare said %d", len(rec), p.Size)
	}
	return rec
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name        string
		born, store netip.AddrPort
		body        int
	}{
		{"v4/v4 small", v4, v4, 10},
		{"v6/v4", v6, v4, 100},
		{"v4/v6", v4, v6, 0},
		{"v6/v6 large", v6, v6, 10000}, // over smallRecord: three pieces
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Message{Topic: "topic-" + c.name[:2], QueueID: 7, Flag: -3, Body: bytes.Repeat([]byte{0xAB}, c.body),
				Properties: map[string]string{"TAGS": "T", "KEYS": "a b", "empty": "", "UNIQ_KEY": "U"},
				SysFlag:    TransactionCommit | FlagCompressed, BornTimestamp: 1234, BornHost: c.born, ReconsumeTimes: 2,
				PreparedTransactionOffset: 99}
			st := Stamp{QueueOffset: 42, PhysicalOffset: 1 << 33, StoreTimestamp: 5678}
			rec := encode(t, m, c.store, st)
			got, err := Decode(rec, 1<<33, true)
			if err != nil {
				t.Fatal(err)
			}
			wantSys := m.SysFlag
			if c.born.Addr().Is6() {
				wantSys |= FlagBornHostV6
			}
			if c.store.Addr().Is6() {
				wantSys |= FlagStoreHostV6
			}
			if got.Topic != m.Topic || got.QueueID != 7 || got.Flag != -3 || !bytes.Equal(got.Body, m.Body) ||
				got.SysFlag != wantSys || got.BornTimestamp != 1234 || got.BornHost != c.born || got.ReconsumeTimes != 2 ||
				got.PreparedTransactionOffset != 99 || got.QueueOffset != 42 || got.CommitLogOffset != 1<<33 ||
				got.StoreTimestamp != 5678 || got.StoreHost != c.store || int(got.StoreSize) != len(rec) ||
				got.BodyCRC != BodyCRC(m.Body) {
				t.Fatalf("decoded %+v", got)
			}
			if want := map[string]string{"TAGS": "T", "KEYS": "a b", "UNIQ_KEY": "U"}; !maps.Equal(got.Properties, want) {
				t.Fatalf("properties %v", got.Properties)
			}
			if l := Length(wantSys, c.body, len(m.Topic), len("KEYS\x01a b\x02TAGS\x01T\x02UNIQ_KEY\x01U")); l != len(rec) {
				t.Fatalf("Length %d, record %d", l, len(rec))
			}
		})
	}
}

func TestBornTimestampDefaultsToStoreTime(t *testing.T) {
	rec := encode(t, &Message{Topic: "t"}, v4, Stamp{StoreTimestamp: 77})
	got, err := Decode(rec, 0, true)
	if err != nil || got.BornTimestamp != 77 {
		t.Fatalf("%v %v", got, err)
	}
}

func TestPrepareLimits(t *testing.T) {
	var e Encoder
	for _, c := range []struct {
		m    *Message
		max  int
		want error
	}{
		{&Message{Topic: strings.Repeat("t", 128)}, 100, ErrTopicTooLong},
		{&Message{Topic: ""}, 100, ErrMessageIllegal},
		{&Message{Topic: "t", Body: make([]byte, 101)}, 100, ErrMessageTooLarge},
		{&Message{Topic: "t", Properties: map[string]string{"k": strings.Repeat("v", 32766)}}, 1 << 20, ErrPropertiesTooLarge},
	} {
		if _, err := e.Prepare(c.m, v4, c.max); !errors.Is(err, c.want) {
			t.Errorf("%v: %v, want %v", c.want, err, c.want)
		}
	}
	if !errors.Is(ErrTopicTooLong, ErrMessageIllegal) || !errors.Is(ErrMessageTooLarge, ErrMessageIllegal) {
		t.Fatal("size errors must be MESSAGE_ILLEGAL")
	}
	if _, err := e.Prepare(&Message{Topic: strings.Repeat("t", 127), Properties: map[string]string{"k": strings.Repeat("v", 32765)}}, v4, 100); err != nil {
		t.Fatalf("the limits themselves: %v", err)
	}
}

func TestCheckErrors(t *testing.T) {
	good := encode(t, &Message{Topic: "t", Body: []byte("body")}, v4, Stamp{PhysicalOffset: 100})
	flip := func(i int, mask byte) []byte {
		b := bytes.Clone(good)
		b[i] ^= mask
		return b
	}
	v2 := bytes.Clone(good)
	copy(v2[4:], []byte{0xDA, 0xA3, 0x20, 0xAB})
	blank := PutBlank(make([]byte, 8), 64)
	for _, c := range []struct {
		name string
		b    []byte
		pos  int64
		want error
	}{
		{"zeros", make([]byte, 200), 0, ErrNoRecord},
		{"short", good[:5], 100, ErrTruncated},
		{"truncated", good[:len(good)-1], 100, ErrTruncated},
		{"v2", v2, 100, ErrUnsupportedVersion},
		{"crc", flip(len(good)-4-1-2-1, 1), 100, ErrCorrupt}, // last body byte
		{"physical offset", good, 101, ErrCorrupt},
		{"bad magic", flip(5, 0x40), 100, ErrCorrupt},
		{"total size", append(flip(3, 1), 0, 0, 0), 100, ErrCorrupt},
		{"total size past the buffer", flip(3, 1), 100, ErrTruncated},
		{"blank too long", append(bytes.Clone(blank), make([]byte, 10)...), 0, ErrCorrupt},
	} {
		if _, err := Check(c.b, c.pos, true); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if !errors.Is(ErrNoRecord, ErrCorrupt) {
		t.Fatal("ErrNoRecord must be ErrCorrupt")
	}
	if info, err := Check(append(bytes.Clone(blank), make([]byte, 56)...), 0, true); err != nil || !info.Blank || info.Size != 64 {
		t.Fatalf("blank: %+v %v", info, err)
	}
	if _, err := Check(good, -1, true); err != nil {
		t.Fatalf("pos -1 skips the offset check: %v", err)
	}
}

func TestProperties(t *testing.T) {
	got := AppendProperties(nil, map[string]string{"b": "2", "a": "1", "skip": "", "c": "x y"})
	if string(got) != "a\x011\x02b\x012\x02c\x01x y" {
		t.Fatalf("encoded %q", got)
	}
	if AppendProperties(nil, nil) != nil {
		t.Fatal("no properties must encode to nothing")
	}
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{"a\x011\x02b\x012", map[string]string{"a": "1", "b": "2"}},
		{"a\x011\x02b\x012\x02", map[string]string{"a": "1", "b": "2"}}, // trailing \x02 (older writers)
		{"0\x01imagoodperson0\x02KEYS\x011632821159368\x02TAGS\x01TAG1\x02", map[string]string{"0": "imagoodperson0", "KEYS": "1632821159368", "TAGS": "TAG1"}},
		{"\x02\x02a\x02ab\x02\x01b\x02k\x01\x02k\x01v", map[string]string{"k": "v"}}, // short and empty segments ignored
		{"", map[string]string{}},
		{"a\x011\x02a\x012", map[string]string{"a": "2"}}, // later wins
		{"a\x01b\x01c", map[string]string{"a": "b\x01c"}},
	} {
		if got := ParseProperties([]byte(c.in)); !maps.Equal(got, c.want) {
			t.Errorf("ParseProperties(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if v, ok := PropertyValue([]byte("TAGS\x01A\x02KEYS\x01k"), "KEYS"); !ok || string(v) != "k" {
		t.Fatalf("PropertyValue: %q %v", v, ok)
	}
	if _, ok := PropertyValue([]byte("TAGS\x01A"), "KEYS"); ok {
		t.Fatal("PropertyValue found a missing key")
	}
}

func TestOffsetMsgID(t *testing.T) {
	id := OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), 0x1122334455)
	if id != "7F00000100002A9F0000001122334455" {
		t.Fatalf("v4 id %s", id)
	}
	id6 := OffsetMsgID(v6, 1)
	if len(id6) != 56 || strings.ToUpper(id6) != id6 {
		t.Fatalf("v6 id %s", id6)
	}
	for _, c := range []struct {
		id   string
		host netip.AddrPort
		off  int64
	}{{id, netip.MustParseAddrPort("127.0.0.1:10911"), 0x1122334455}, {id6, v6, 1}, {strings.ToLower(id), netip.MustParseAddrPort("127.0.0.1:10911"), 0x1122334455}} {
		h, off, err := ParseOffsetMsgID(c.id)
		if err != nil || h != c.host || off != c.off {
			t.Fatalf("parse %s: %v %d %v", c.id, h, off, err)
		}
	}
	for _, bad := range []string{"", "XYZ", strings.Repeat("G", 32), id[:31]} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("parse %q: %v", bad, err)
		}
	}
}

func TestJavaStringHashCode(t *testing.T) {
	// Values of java.lang.String.hashCode().
	for s, want := range map[string]int32{
		"": 0, "a": 97, "TAG1": 2567159, "TagA": 2598919, "hello": 99162322, "order-42": 1234255197,
		"\u00e9t\u00e9": 227742, "\U0001F600": 1772899, "Hello, 世界 and a long tag to overflow": -10734039,
	} {
		if got := JavaStringHashCode(s); got != want {
			t.Errorf("JavaStringHashCode(%q) = %d, want %d", s, got, want)
		}
		if got := JavaStringHashCodeBytes([]byte(s)); got != want {
			t.Errorf("JavaStringHashCodeBytes(%q) = %d, want %d", s, got, want)
		}
	}
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80x"} { // invalid UTF-8
		if JavaStringHashCode(s) != JavaStringHashCodeBytes([]byte(s)) {
			t.Errorf("string and bytes variants differ on %q", s)
		}
	}
	if TagsCode("") != 0 || TagsCode("TagA") != 2598919 || TagsCode("Hello, 世界 and a long tag to overflow") != -10734039 {
		t.Fatal("TagsCode")
	}
}

func TestEncodeAllocs(t *testing.T) {
	var e Encoder
	m := &Message{Topic: "t", Body: make([]byte, 128), Properties: map[string]string{"TAGS": "A", "KEYS": "k"}}
	allocs := testing.AllocsPerRun(100, func() {
		p, _ := e.Prepare(m, v4, 1<<20)
		e.Encode(p, Stamp{StoreHost: v4})
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per encode", allocs)
	}
}

func FuzzCheck(f *testing.F) {
	var e Encoder
	p, _ := e.Prepare(&Message{Topic: "t", Body: []byte("fuzz"), Properties: map[string]string{"TAGS": "A"}, BornHost: v6}, v4, 1<<20)
	h, b, tl := e.Encode(p, Stamp{StoreHost: v4})
	f.Add(append(append(append([]byte(nil), h...), b...), tl...))
	f.Add(PutBlank(make([]byte, 8), 8))
	f.Add(make([]byte, 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := Check(b, -1, true)
		if err == nil && !info.Blank {
			if int(info.Size) > len(b) || Length(info.SysFlag, len(info.Body), len(info.Topic), len(info.Properties)) != int(info.Size) {
				t.Fatalf("accepted an inconsistent record: %+v", info)
			}
			ParseProperties(info.Properties)
		}
	})
}

// TestCheckTornSector: a power cut that leaves one sector of an unsynced
// record old (zeros in the CommitLog) outside the body is caught, although
// the body CRC still matches (before, such a record was recovered with
// zeroed properties: a phantom, seed 4485362335358623705).
func TestCheckTornSector(t *testing.T) {
	var e Encoder
	m := &Message{Topic: "TopicA", Body: []byte("body"), Properties: map[string]string{
		"KEYS": strings.Repeat("k", 600), "TAGS": "tagA"}}
	p, err := e.Prepare(m, netip.MustParseAddrPort("127.0.0.1:10911"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	const pos = 4096 + 400 // the properties cross the sector boundary at 4608
	head, body, tail := e.Encode(p, Stamp{PhysicalOffset: pos, StoreTimestamp: 1, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911")})
	rec := append(append(append([]byte(nil), head...), body...), tail...)
	if _, err := Check(rec, pos, true); err != nil {
		t.Fatalf("intact record: %v", err)
	}
	torn := append([]byte(nil), rec...)
	clear(torn[512-400:])
	if _, err := Check(torn, pos, true); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "torn sector") {
		t.Fatalf("torn record: %v, want a torn-sector error", err)
	}
	// A body over many sectors: zeroing any one sector of the record is
	// caught, by the CRC where the sector holds body bytes and as a torn
	// sector elsewhere (the check skips the body's sectors in one step).
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	for _, bodyLen := range []int{1500, 2048, 4000} {
		m := &Message{Topic: "TopicA", Body: bytes.Repeat([]byte("b"), bodyLen), Properties: map[string]string{
			"KEYS": strings.Repeat("k", 1200), "TAGS": "tagA"}}
		p, err := e.Prepare(m, host, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int64{8192, 8192 + 100, 8192 + 511} {
			head, body, tail := e.Encode(p, Stamp{PhysicalOffset: pos, StoreTimestamp: 1, StoreHost: host})
			rec := append(append(append([]byte(nil), head...), body...), tail...)
			if _, err := Check(rec, pos, true); err != nil {
				t.Fatalf("body %d at %d, intact: %v", bodyLen, pos, err)
			}
			for s := pos - pos%SectorSize; s < pos+int64(len(rec)); s += SectorSize {
				torn := append([]byte(nil), rec...)
				clear(torn[max(s, pos)-pos : min(s+SectorSize, pos+int64(len(rec)))-pos])
				if bytes.Equal(torn, rec) {
					continue // only TOTALSIZE's high byte, zero anyway
				}
				if _, err := Check(torn, pos, true); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("body %d at %d, sector %d zeroed: %v, want ErrCorrupt", bodyLen, pos, s, err)
				}
			}
		}
	}
	if _, err := e.Prepare(&Message{Topic: "T", Properties: map[string]string{"K": "a\x00b"}}, netip.AddrPort{}, 1<<20); !errors.Is(err, ErrMessageIllegal) {
		t.Fatalf("NUL in a property: %v, want ErrMessageIllegal", err)
	}
}

// TestEncodedProperties: a message carrying its properties pre-encoded is
// written with exactly those bytes (the client's order kept, no map), reads
// back like the map form, and is checked for NUL bytes and size alike.
func TestEncodedProperties(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	raw := []byte("UNIQ_KEY\x01U1\x02TAGS\x01T\x02WAIT\x01true\x02CLUSTER\x01c")
	m := &Message{Topic: "t", Body: []byte("b"), EncodedProperties: raw,
		Properties: map[string]string{"IGNORED": "x"}}
	var e Encoder
	p, err := e.Prepare(m, host, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	head, body, tail := e.Encode(p, Stamp{StoreTimestamp: 1, StoreHost: host})
	rec := append(append(append([]byte(nil), head...), body...), tail...)
	info, err := Check(rec, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(info.Properties, raw) {
		t.Fatalf("stored properties %q, want the client's %q", info.Properties, raw)
	}
	if m.Tags() != "T" || m.Property("UNIQ_KEY") != "U1" || m.Property("IGNORED") != "" ||
		!m.PropertyIs("WAIT", "true") || m.PropertyIs("WAIT", "false") || !m.HasProperty("CLUSTER") || m.HasProperty("DELAY") {
		t.Fatalf("property accessors disagree with %q", raw)
	}
	if got := m.AppendEncodedProperties(nil); !bytes.Equal(got, raw) {
		t.Fatalf("AppendEncodedProperties = %q", got)
	}
	// The map form of the same properties gives a record of the same size.
	mm := &Message{Topic: "t", Body: []byte("b"), Properties: ParseProperties(raw)}
	if pm, err := e.Prepare(mm, host, 1<<20); err != nil || pm.Size != p.Size {
		t.Fatalf("map form: size %d (%v), encoded form %d", pm.Size, err, p.Size)
	}
	if _, err := e.Prepare(&Message{Topic: "t", EncodedProperties: []byte("K\x01a\x00b")}, host, 1<<20); !errors.Is(err, ErrMessageIllegal) {
		t.Fatalf("NUL in encoded properties: %v, want ErrMessageIllegal", err)
	}
	if _, err := e.Prepare(&Message{Topic: "t", EncodedProperties: bytes.Repeat([]byte("k"), MaxPropertiesLength+1)}, host, 1<<20); !errors.Is(err, ErrPropertiesTooLarge) {
		t.Fatalf("oversized encoded properties: %v, want ErrPropertiesTooLarge", err)
	}
}

// TestVerifyBodyCRC: the split CRC check accepts an intact record (IPv4
// and IPv6 hosts) and refuses one with a flipped body byte, with the error
// CheckWith gives.
func TestVerifyBodyCRC(t *testing.T) {
	for _, host := range []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("[2001:db8::1]:1")} {
		var e Encoder
		p, err := e.Prepare(&Message{Topic: "t", Body: []byte("some body"), BornHost: host, Properties: map[string]string{"TAGS": "A"}}, host, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		head, body, tail := e.Encode(p, Stamp{StoreTimestamp: 1, StoreHost: host})
		rec := append(append(append([]byte(nil), head...), body...), tail...)
		if err := VerifyBodyCRC(rec); err != nil {
			t.Fatalf("%v: intact record: %v", host, err)
		}
		rec[len(rec)-len("TAGS\x01A")-2-len("t")-1-1] ^= 1 // the last body byte
		_, want := Check(rec, 0, true)
		if err := VerifyBodyCRC(rec); !errors.Is(err, ErrCorrupt) || want == nil || err.Error() != want.Error() {
			t.Fatalf("%v: damaged body: %v, want %v", host, err, want)
		}
	}
	if err := VerifyBodyCRC(make([]byte, 10)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short input: %v", err)
	}
}
