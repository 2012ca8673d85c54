package remoting

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hand-written JSON header codec must behave exactly as the
// encoding/json codec it replaced (header_json_ref_test.go): same
// accept/reject, same command, same bytes.

// checkDecodeSame decodes header with both decoders and reports any
// difference.
func checkDecodeSame(t testing.TB, header []byte) {
	t.Helper()
	want, wantErr := refDecodeJSONHeader(header)
	got, gotErr := decodeJSONHeader(header)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("header %q:\n encoding/json: %v, %v\n hand-written:  %v, %v", header, want, wantErr, got, gotErr)
	}
	if wantErr != nil {
		if !errors.Is(gotErr, ErrBadHeader) {
			t.Fatalf("header %q: error %v does not wrap ErrBadHeader", header, gotErr)
		}
		return
	}
	if !sameCommand(got, want) {
		t.Fatalf("header %q:\n encoding/json: %#v\n hand-written:  %#v", header, want, got)
	}
	if err := ownedDecodeSame(header, got); err != nil {
		t.Fatal(err)
	}
	for k, v := range want.ExtFields { // a lean command reads the same
		if gv, ok := got.Ext(k); !ok || gv != v {
			t.Fatalf("header %q: Ext(%q) = %q, %v; want %q", header, k, gv, ok, v)
		}
	}
}

// ownedDecodeSame decodes a copy of header in place
// (decodeJSONHeaderOwned) and reports how the command differs from want,
// the copying decoder's.
func ownedDecodeSame(header []byte, want *RemotingCommand) error {
	own := bytes.Clone(header)
	got, err := decodeJSONHeaderOwned(own)
	if err != nil {
		return fmt.Errorf("header %q: decoded in place: %w", header, err)
	}
	if !sameCommand(got, want) {
		return fmt.Errorf("header %q:\n copied:   %#v\n in place: %#v", header, want, got)
	}
	return nil
}

// checkEncodeSame encodes c with both encoders and reports any difference.
func checkEncodeSame(t testing.TB, c *RemotingCommand) {
	t.Helper()
	if c.lean {
		// The lean encoding is the map's.
		a, errA := c.MarshalFrame()
		b, errB := materialized(c).MarshalFrame()
		if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
			t.Fatalf("command %v: lean frame %q (%v), map frame %q (%v)", c, a, errA, b, errB)
		}
		c = materialized(c)
	}
	want, err := refEncodeJSONHeader(c)
	if err != nil {
		t.Fatalf("reference encoder: %v", err)
	}
	ext, _ := sortedExt(c.ExtFields, nil)
	got := appendJSONHeader(nil, c, ext)
	if !bytes.Equal(got, want) {
		t.Fatalf("command %v:\n encoding/json: %s\n hand-written:  %s", c, want, got)
	}
}

// jsonHeaderCorpus is the inputs of the codec tests plus edge cases of the
// JSON grammar, of string escapes and of encoding/json's field matching.
func jsonHeaderCorpus(t testing.TB) []string {
	corpus := []string{
		// TestDecodeClientHeaders
		`{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"T"}}`,
		`{"code":34,"extFields":{"a":"1"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":399}`,
		`{"code":1,"remark":null,"language":null}`,
		` {"code":1,"language":9,"extFields":{"n":12,"b":true,"z":null,"s":"x"}}`,
		`{"code":1,"language":"COBOL"}`,
		// TestMalformedFrames
		``, `{"code":`, `null`, `[1,2]`, `{"code":1}x`, `{"code":"10"}`, `{"code":4294967296}`,
		`{"code":1,"extFields":{"a":{"b":"c"}}}`, `{"code":1,"extFields":"a"}`, `{"code":1,"language":300}`,
		// TestGoldenJSONFrame and the storm's bad JSON
		`{"code":10,"language":"GO","version":317,"opaque":7,"flag":0,"extFields":{"queueId":"1","topic":"T"},"serializeTypeCurrentRPC":"JSON"}`,
		`{"code":10,"extFields":`,
		// Whitespace, empties, syntax.
		"{}", " \t\r\n{ \t\r\n} \t\r\n", "{\"code\" : 1 , \"flag\"\n:\n2}", "\v{}", "{}\x00", "\ufeff{}",
		"{", "}", "{,}", `{"code":1,}`, `{"code" 1}`, `{"code":1 "flag":2}`, `{code:1}`, `{'code':1}`,
		`{"code":1}}`, `{"code":1}{}`, `{"a":[1,2,]}`, `{"a":[,]}`, `{"a":[]}`, `{"a":{}}`, `{"a":[[],{}]}`,
		`{"a":{"b":[1,{"c":null}],"d":"e"}}`, `{"a":{"b"}}`, `{"a":{"b":}}`, `{"a":{1:2}}`, `{"a":[1 2]}`,
		`{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":undefined}`,
		`{"a":"\u00"}`, `{"a":"\x41"}`, `{"a":"\'"}`, `{"a":"\`, `{"a":"`, "{\"a\":\"\x01\"}", "{\"a\":\"\x7f\"}",
		// Numbers.
		`{"code":-0}`, `{"code":0}`, `{"code":00}`, `{"code":01}`, `{"code":-}`, `{"code":+1}`, `{"code":1.}`,
		`{"code":.5}`, `{"code":1.0}`, `{"code":1e0}`, `{"code":1E+2}`, `{"code":1e}`, `{"code":1e-}`,
		`{"code":2147483647}`, `{"code":2147483648}`, `{"code":-2147483648}`, `{"code":-2147483649}`,
		`{"code":9223372036854775807}`, `{"code":9223372036854775808}`, `{"code":99999999999999999999999}`,
		`{"version":-1,"opaque":-5,"flag":3}`, `{"code":true}`, `{"code":{}}`, `{"code":[]}`,
		`{"code":5,"code":null}`, `{"code":5,"code":6}`, `{"x":-0.0e-0,"y":1E400,"z":-12.5e+3}`,
		// Language.
		`{"language":"JAVA"}`, `{"language":"GO"}`, `{"language":"go"}`, `{"language":"\u0047O"}`, `{"language":""}`,
		`{"language":0}`, `{"language":9}`, `{"language":9.0}`, `{"language":9.5}`, `{"language":255}`,
		`{"language":256}`, `{"language":-1}`, `{"language":-0}`, `{"language":2.55e2}`, `{"language":1e-400}`,
		`{"language":1e400}`, `{"language":255.00000000000001}`, `{"language":255.0000000000001}`,
		`{"language":true}`, `{"language":[]}`, `{"language":{}}`, `{"language":"GO","language":null}`,
		`{"language":12}`, `{"language":13}`, `{"language":127}`,
		// Remark.
		`{"remark":"x"}`, `{"remark":"x","remark":null}`, `{"remark":null,"remark":"y"}`, `{"remark":1}`,
		`{"remark":true}`, `{"remark":{}}`, `{"remark":""}`,
		// Escapes, surrogates, invalid UTF-8.
		`{"remark":"a\"b\\c\/d\be\ff\ng\rh\ti"}`, `{"remark":"\u0000\u001f\u007f\u0080\u00e9\u2028\uFFFF"}`,
		`{"remark":"\uD83D\uDE00"}`, `{"remark":"\ud83d\ude00x"}`, `{"remark":"\uD83D"}`, `{"remark":"\uDE00"}`,
		`{"remark":"\uD83Dx"}`, `{"remark":"\uD83D\u0041"}`, `{"remark":"\uD83D\uD83D\uDE00"}`,
		`{"remark":"\uDE00\uD83D"}`, `{"remark":"\uD83D\\uDE00"}`, `{"remark":"\uD83D\n"}`,
		"{\"remark\":\"\xff\"}", "{\"remark\":\"a\xffb\xfe\"}", "{\"remark\":\"\xed\xa0\x80\"}",
		"{\"remark\":\"\xc3\"}", "{\"remark\":\"\xef\xbf\xbd\"}", "{\"remark\":\"\xf4\x90\x80\x80\"}",
		"{\"remark\":\"ünïcödé\"}", "{\"remark\":\"\xe2\x80\xa8\"}", "{\"remark\":\"\\u00e9\xc3\xa9\xff\"}",
		"{\"extFields\":{\"\xff\":\"\xfe\"}}", `{"extFields":{"\u0000":"\u0001"}}`,
		// Field matching: exact, case-insensitive, Unicode folding, escapes.
		`{"CODE":1}`, `{"Code":1,"code":2}`, `{"code":2,"CoDe":3}`, `{"\u0063ode":4}`, `{"LANGUAGE":"GO"}`,
		`{"ExtFields":{"a":"b"}}`, `{"EXTFIELDS":{"a":"b"}}`, "{\"extField\u017f\":{\"a\":\"b\"}}",
		"{\"remar\u212a\":\"k\"}", "{\"\u212aode\":1}", `{"remar\u212a":"k"}`, "{\"c\u00f6de\":1}",
		`{"serializeTypeCurrentRPC":"ROCKETMQ"}`, `{"serializeTypeCurrentRPC":{"deep":[1,2,{"x":null}]}}`,
		`{"code ":1}`, `{"cod":1}`, `{"codee":1}`, `{"":1}`, "{\"fla\u0261\":1}", "{\"FLAG\":1,\"flag\":null}",
		// extFields: strict, lenient, null handling, duplicates, merging.
		`{"extFields":null}`, `{"extFields":{}}`, `{"extFields":{"a":null}}`, `{"extFields":{"a":null,"b":1}}`,
		`{"extFields":{"a":"x","a":null}}`, `{"extFields":{"a":"x","a":null,"b":true}}`,
		`{"extFields":{"a":1.5e3,"b":-0,"c":false,"d":true}}`, `{"extFields":{"a":[1]}}`, `{"extFields":{"a":[]}}`,
		`{"extFields":{"a":{},"a":"x"}}`, `{"extFields":{"a":"x","a":{}}}`, `{"extFields":{"a":{},"a":null}}`,
		`{"extFields":{"a":{},"a":1}}`, `{"extFields":{"a":"1"},"extFields":{"b":"2"}}`,
		`{"extFields":{"a":"1"},"extFields":null}`, `{"extFields":{"a":"1"},"extFields":null,"extFields":{"b":"2"}}`,
		`{"extFields":{"a":1},"extFields":null,"extFields":{"b":"2","c":null}}`, `{"extFields":{"a":1},"extFields":null}`,
		`{"extFields":{"a":"1"},"extFields":{"a":"2"}}`, `{"extFields":{"a":"1"},"extFields":{}}`,
		`{"extFields":{"a":{}},"extFields":null}`, `{"extFields":{"a":[{}]},"extFields":{"a":"s"}}`,
		`{"extFields":[]}`, `{"extFields":1}`, `{"extFields":true}`, `{"extFields":{"a":"b"},"extFields":"c"}`,
		`{"extFields":{"a" : "b" , "c" : 1 }}`, `{"extFields":{"a":"b",}}`, `{"extFields":{"a"}}`,
		`{"extFields":{"a":"\u00e9\n","\"k\"":"v"}}`, `{"extFields":{"a":nul}}`, `{"extFields":{"a":-}}`,
		`{"extFields":{"a":{"b":}}}`, `{"extFields":{"a":[1,]}}`,
	}
	// Nesting at and beyond encoding/json's depth limit (10000, the header
	// object included).
	for _, depth := range []int{9998, 9999, 10000} {
		corpus = append(corpus,
			`{"x":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}`,
			`{"x":`+strings.Repeat(`{"a":`, depth)+`1`+strings.Repeat("}", depth)+`}`,
			`{"extFields":{"x":`+strings.Repeat("[", depth-1)+strings.Repeat("]", depth-1)+`}}`)
	}
	// Headers that the encoders write.
	for _, c := range append(roundTripCommands(), sendMessageV2Request(), pullResponse()) {
		h, err := refEncodeJSONHeader(c)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, string(h))
	}
	// The JSON headers of FuzzDecodeFrame's seed corpus.
	files, _ := filepath.Glob("testdata/fuzz/*/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s) >= 8 && s[4] == 0 {
			corpus = append(corpus, s[8:])
		}
	}
	return corpus
}

func TestJSONHeaderDecodeDifferential(t *testing.T) {
	for _, h := range jsonHeaderCorpus(t) {
		checkDecodeSame(t, []byte(h))
		// Every prefix, which covers every truncation error.
		if len(h) < 400 {
			for i := range len(h) {
				checkDecodeSame(t, []byte(h[:i]))
			}
		}
	}
}

// TestJSONHeaderDecodeGenerated compares the decoders on random headers
// built from a grammar of field names, values and tokens chosen to hit the
// decoder's branches, valid and not.
func TestJSONHeaderDecodeGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for range n {
		h := randomHeader(rng)
		checkDecodeSame(t, h)
		// And a mutation of it.
		if len(h) > 0 {
			m := bytes.Clone(h)
			switch i := rng.IntN(len(m)); rng.IntN(3) {
			case 0:
				m[i] = byte(rng.Uint32())
			case 1:
				m = append(m[:i], m[i+1:]...)
			default:
				const toks = "{}[],:\"\\ 0-e.nu"
				m = append(m[:i], append([]byte{toks[rng.IntN(len(toks))]}, m[i:]...)...)
			}
			checkDecodeSame(t, m)
		}
	}
}

// The broken variant: unescaping over the header's start instead of the
// value's own text corrupts the strings decoded before, and the
// comparison of the two decoders on generated headers catches it.
func TestJSONHeaderOwnedDecodeBrokenVariant(t *testing.T) {
	inPlaceAtHeaderStart = true
	defer func() { inPlaceAtHeaderStart = false }()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 30000 {
		h := randomHeader(rng)
		want, err := decodeJSONHeader(h)
		if err != nil {
			continue
		}
		if ownedDecodeSame(h, want) != nil {
			return
		}
	}
	t.Fatal("the in-place decoder writing over the header's start decoded every generated header alike")
}

var (
	genKeys = []string{"code", "language", "version", "opaque", "flag", "remark", "extFields",
		"serializeTypeCurrentRPC", "CODE", "Flag", "extfields", "remar\u212a", "\\u0063ode", "x", ""}
	genStrings = []string{``, `a`, `GO`, `JAVA`, `\u0047O`, `\n\t\"\\\/`, `\uD83D\uDE00`, `\uD83D`, `\uDE00x`,
		"\xff", "\xed\xa0\x80", `ü`, "\u2028", `\u0000`, `UNIQ_KEY\u0001abc\u0002`, `1`}
	genScalars = []string{`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `9`, `9.0`, `255`, `256`, `1e2`, `-1.5E-3`,
		`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `1e400`, `12345678901234567890`}
)

func randomHeader(rng *rand.Rand) []byte {
	var b []byte
	b = append(b, " \n"[:rng.IntN(3)]...)
	b = append(b, '{')
	for i := range rng.IntN(8) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, genKeys[rng.IntN(len(genKeys))]...)
		b = append(b, `":`...)
		b = randomValue(rng, b, 0)
	}
	b = append(b, '}')
	b = append(b, " \t"[:rng.IntN(3)]...)
	return b
}

func randomValue(rng *rand.Rand, b []byte, depth int) []byte {
	switch k := rng.IntN(10); {
	case k < 3:
		return append(b, genScalars[rng.IntN(len(genScalars))]...)
	case k < 6 || depth > 3:
		b = append(b, '"')
		for range rng.IntN(3) {
			b = append(b, genStrings[rng.IntN(len(genStrings))]...)
		}
		return append(b, '"')
	case k < 9:
		b = append(b, '{')
		for i := range rng.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			if rng.IntN(2) == 0 {
				b = append(b, "abcd"[rng.IntN(4)])
			} else {
				b = append(b, genStrings[rng.IntN(len(genStrings))]...)
			}
			b = append(b, `":`...)
			b = randomValue(rng, b, depth+1)
		}
		return append(b, '}')
	default:
		b = append(b, '[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b = append(b, ',')
			}
			b = randomValue(rng, b, depth+1)
		}
		return append(b, ']')
	}
}

func TestJSONHeaderEncodeDifferential(t *testing.T) {
	cmds := append(roundTripCommands(), sendMessageV2Request(), pullResponse(),
		&RemotingCommand{}, &RemotingCommand{Language: LanguageUnknown, Remark: "x"},
		&RemotingCommand{Language: 200, Code: -1, Version: -2, Opaque: -3, Flag: -4})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		c := &RemotingCommand{
			Code: rng.Int32() - 1<<30, Language: LanguageCode(rng.IntN(256)), Version: rng.Int32N(1000),
			Opaque: rng.Int32(), Flag: rng.Int32N(4), Remark: randomString(rng),
		}
		if rng.IntN(4) > 0 {
			c.ExtFields = map[string]string{}
			for range rng.IntN(20) {
				c.ExtFields[randomString(rng)] = randomString(rng)
			}
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		checkEncodeSame(t, c)
		// And the hand-written decoder reads it back as encoding/json does.
		h, _ := refEncodeJSONHeader(c)
		checkDecodeSame(t, h)
	}
}

// randomString mixes ASCII, every control byte, quotes, backslashes,
// multi-byte runes, U+2028/2029, U+FFFD and invalid UTF-8.
func randomString(rng *rand.Rand) string {
	var b []byte
	for range rng.IntN(12) {
		switch rng.IntN(8) {
		case 0:
			b = append(b, byte(rng.IntN(0x20)))
		case 1:
			b = append(b, `"\<>&/`[rng.IntN(6)])
		case 2:
			b = utf8.AppendRune(b, []rune{'é', '中', '😀', '\u2028', '\u2029', '\ufffd', '\u007f', 'K'}[rng.IntN(8)])
		case 3:
			b = append(b, byte(0x80+rng.IntN(0x80)))
		case 4:
			b = append(b, "\xed\xa0\x80\xc3"[rng.IntN(4)])
		default:
			b = append(b, byte('a'+rng.IntN(26)))
		}
	}
	return string(b)
}

// FuzzJSONHeader compares the hand-written JSON header decoder with the
// encoding/json one on arbitrary input (same accept/reject, same command)
// and, for what decodes, the two encoders.
func FuzzJSONHeader(f *testing.F) {
	for _, h := range jsonHeaderCorpus(f) {
		if len(h) < 1000 {
			f.Add([]byte(h))
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		checkDecodeSame(t, header)
		if c, err := decodeJSONHeader(header); err == nil {
			checkEncodeSame(t, c)
		}
	})
}
