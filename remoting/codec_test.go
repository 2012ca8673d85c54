package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// The golden frames below are written by hand from the layout in format.go,
// not produced by the encoder.

func TestGoldenJSONFrame(t *testing.T) {
	cmd := &RemotingCommand{
		Code: 10, Language: LanguageGo, Version: 317, Opaque: 7,
		ExtFields: map[string]string{"topic": "T", "queueId": "1"},
		Body:      []byte("hi"),
	}
	header := `{"code":10,"language":"GO","version":317,"opaque":7,"flag":0,` +
		`"extFields":{"queueId":"1","topic":"T"},"serializeTypeCurrentRPC":"JSON"}`
	// 134 header bytes: LENGTH = 4 + 134 + 2 = 140 = 0x8c; HEADERWORD = 0<<24 | 0x86.
	want := append([]byte{0, 0, 0, 0x8c, 0, 0, 0, 0x86}, header...)
	want = append(want, 'h', 'i')

	got, err := cmd.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("frame\n got %q\nwant %q", got, want)
	}
	back, err := DecodeFrame(want, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sameCommand(back, cmd) {
		t.Fatalf("decoded %v, want %v", back, cmd)
	}
}

func TestGoldenBinaryFrame(t *testing.T) {
	cmd := &RemotingCommand{
		Code: 10, Language: LanguageGo, Version: 317, Opaque: 7, Flag: FlagResponse,
		Remark: "ok", ExtFields: map[string]string{"a": "b"},
		SerializeType: SerializeRocketMQ, Body: []byte("xy"),
	}
	want := []byte{
		0, 0, 0, 0x25, // LENGTH = 4 + 31 + 2 = 37
		1, 0, 0, 0x1f, // ROCKETMQ, HEADERLEN = 21 + 2 + 8 = 31
		0, 10, // CODE
		9,       // LANGUAGE GO
		1, 0x3d, // VERSION 317
		0, 0, 0, 7, // OPAQUE
		0, 0, 0, 1, // FLAG response
		0, 0, 0, 2, 'o', 'k', // REMARK
		0, 0, 0, 8, // EXTLEN
		0, 1, 'a', 0, 0, 0, 1, 'b', // a=b
		'x', 'y', // BODY
	}
	got, err := cmd.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("frame\n got % x\nwant % x", got, want)
	}
	back, err := DecodeFrame(want, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sameCommand(back, cmd) {
		t.Fatalf("decoded %v, want %v", back, cmd)
	}
}

func roundTripCommands() []*RemotingCommand {
	return []*RemotingCommand{
		{Code: 0, ExtFields: map[string]string{}},
		{Code: 11, Language: LanguageJava, Version: -1, Opaque: -5, Flag: FlagOneway,
			Remark: "ünïcödé <&> \"quoted\"\n", ExtFields: map[string]string{"": "", "k\x01": "v\x02"},
			Body: bytes.Repeat([]byte{0, 1, 2}, 1000)},
		{Code: 32767, Language: LanguageUnknown, Version: 32767, Opaque: 1<<31 - 1, Flag: -1,
			ExtFields: map[string]string{"properties": "UNIQ_KEY\x01abc\x02TAGS\x01A\x02"}},
		{Code: -32768, Language: 200, Version: -32768, Opaque: -1 << 31, ExtFields: map[string]string{}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for i, c := range roundTripCommands() {
			c.SerializeType = st
			frame, err := c.MarshalFrame()
			if err != nil {
				t.Fatalf("%v #%d: %v", st, i, err)
			}
			got, err := DecodeFrame(frame, 0)
			if err != nil {
				t.Fatalf("%v #%d: %v", st, i, err)
			}
			if !sameCommand(got, c) {
				t.Fatalf("%v #%d:\n got %v\nwant %v", st, i, got, c)
			}
			got2, err := ReadFrame(bytes.NewReader(frame), 0)
			if err != nil || !sameCommand(got2, c) {
				t.Fatalf("%v #%d: ReadFrame %v, %v", st, i, got2, err)
			}
		}
	}
}

func TestDecodeClientHeaders(t *testing.T) {
	tests := []struct {
		name, header string
		want         RemotingCommand
	}{
		{"go client", `{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"T"}}`,
			RemotingCommand{Code: 105, Language: LanguageGo, Version: 317, Opaque: 3, ExtFields: map[string]string{"topic": "T"}}},
		{"java fastjson", `{"code":34,"extFields":{"a":"1"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":399}`,
			RemotingCommand{Code: 34, Language: LanguageJava, Version: 399, Opaque: 9, ExtFields: map[string]string{"a": "1"}}},
		{"no ext, null remark", `{"code":1,"remark":null,"language":null}`,
			RemotingCommand{Code: 1, ExtFields: map[string]string{}}},
		{"lenient ext and numeric language", ` {"code":1,"language":9,"extFields":{"n":12,"b":true,"z":null,"s":"x"}}`,
			RemotingCommand{Code: 1, Language: LanguageGo, ExtFields: map[string]string{"n": "12", "b": "true", "s": "x"}}},
		{"unknown language", `{"code":1,"language":"COBOL"}`,
			RemotingCommand{Code: 1, Language: LanguageUnknown, ExtFields: map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeFrame(jsonFrame(tt.header, nil), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got %v, want %v", got, &tt.want)
			}
		})
	}
}

// jsonFrame builds a frame around a raw JSON header.
func jsonFrame(header string, body []byte) []byte {
	return rawFrame(0, []byte(header), body)
}

func rawFrame(st byte, header, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

// binHeader builds a binary header with raw remark and ext sections.
func binHeader(remarkLen int32, remark []byte, extLen int32, ext []byte) []byte {
	b := []byte{0, 10, 9, 1, 0x3d, 0, 0, 0, 7, 0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(remarkLen))
	b = append(b, remark...)
	b = binary.BigEndian.AppendUint32(b, uint32(extLen))
	return append(b, ext...)
}

func TestMalformedFrames(t *testing.T) {
	be32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrBadFrame},
		{"three bytes", []byte{0, 0, 0}, ErrBadFrame},
		{"negative length", be32(-1), ErrBadFrame},
		{"min int32 length", be32(-1 << 31), ErrBadFrame},
		{"length 0", be32(0), ErrBadFrame},
		{"length 3", append(be32(3), 0, 0, 0), ErrBadFrame},
		{"over max", append(be32(1025), make([]byte, 1025)...), ErrFrameTooLarge},
		{"huge", be32(1<<31 - 1), ErrFrameTooLarge},
		{"length exceeds data", append(be32(100), 0, 0, 0, 2, '{', '}'), ErrBadFrame},
		{"length short of data", append(be32(4), 0, 0, 0, 0, 'x'), ErrBadFrame},
		{"header length exceeds frame", append(be32(6), 0, 0, 0, 3, '{', '}'), ErrBadFrame},
		{"header length max", append(be32(6), 0, 0xff, 0xff, 0xff, '{', '}'), ErrBadFrame},
		{"unknown serialize type", rawFrame(2, []byte("{}"), nil), ErrBadFrame},
		{"serialize type 0xff", rawFrame(0xff, []byte("{}"), nil), ErrBadFrame},
		{"empty JSON header", jsonFrame("", nil), ErrBadHeader},
		{"bad JSON", jsonFrame(`{"code":`, nil), ErrBadHeader},
		{"JSON null", jsonFrame(`null`, nil), ErrBadHeader},
		{"JSON array", jsonFrame(`[1,2]`, nil), ErrBadHeader},
		{"JSON trailing garbage", jsonFrame(`{"code":1}x`, nil), ErrBadHeader},
		{"JSON code as string", jsonFrame(`{"code":"10"}`, nil), ErrBadHeader},
		{"JSON code overflows int32", jsonFrame(`{"code":4294967296}`, nil), ErrBadHeader},
		{"JSON nested ext", jsonFrame(`{"code":1,"extFields":{"a":{"b":"c"}}}`, nil), ErrBadHeader},
		{"JSON ext not object", jsonFrame(`{"code":1,"extFields":"a"}`, nil), ErrBadHeader},
		{"JSON language out of range", jsonFrame(`{"code":1,"language":300}`, nil), ErrBadHeader},
		{"binary header too short", rawFrame(1, make([]byte, 20), nil), ErrBadHeader},
		{"binary negative remark", rawFrame(1, binHeader(-1, nil, 0, nil), nil), ErrBadHeader},
		{"binary remark past end", rawFrame(1, binHeader(50, []byte("ab"), 0, nil), nil), ErrBadHeader},
		{"binary ext missing", rawFrame(1, binHeader(0, nil, 0, nil)[:19], nil), ErrBadHeader},
		{"binary negative ext", rawFrame(1, binHeader(0, nil, -8, nil), nil), ErrBadHeader},
		{"binary ext past end", rawFrame(1, binHeader(0, nil, 9, []byte{0, 1, 'a', 0, 0, 0, 1, 'b'}), nil), ErrBadHeader},
		{"binary ext key past end", rawFrame(1, binHeader(0, nil, 3, []byte{0, 9, 'a'}), nil), ErrBadHeader},
		{"binary ext truncated key length", rawFrame(1, binHeader(0, nil, 1, []byte{0}), nil), ErrBadHeader},
		{"binary ext truncated value length", rawFrame(1, binHeader(0, nil, 5, []byte{0, 1, 'a', 0, 0}), nil), ErrBadHeader},
		{"binary ext negative value", rawFrame(1, binHeader(0, nil, 7, []byte{0, 1, 'a', 0xff, 0xff, 0xff, 0xff}), nil), ErrBadHeader},
		{"binary ext value past end", rawFrame(1, binHeader(0, nil, 8, []byte{0, 1, 'a', 0, 0, 0, 9, 'b'}), nil), ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeFrame(tt.frame, 1024)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeFrame = %v, %v; want %v", c, err, tt.want)
			}
			// The streaming reader rejects it too (a short frame as
			// io.ErrUnexpectedEOF).
			if c, err = ReadFrame(bytes.NewReader(tt.frame), 1024); err == nil {
				t.Fatalf("ReadFrame = %v, want an error", c)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, c := range []*RemotingCommand{
		{Code: 40000, SerializeType: SerializeRocketMQ},
		{Version: -40000, SerializeType: SerializeRocketMQ},
		{ExtFields: map[string]string{strings.Repeat("k", 40000): ""}, SerializeType: SerializeRocketMQ},
		{SerializeType: 7},
	} {
		if _, err := c.MarshalFrame(); !errors.Is(err, ErrEncode) {
			t.Errorf("MarshalFrame(%v) = %v, want ErrEncode", c, err)
		}
	}
}

func TestReadFrameEOF(t *testing.T) {
	if _, err := ReadFrame(bytes.NewReader(nil), 0); err != io.EOF {
		t.Fatalf("empty input: %v, want io.EOF", err)
	}
	frame := jsonFrame(`{"code":1}`, []byte("body"))
	for cut := 1; cut < len(frame); cut++ {
		if _, err := ReadFrame(bytes.NewReader(frame[:cut]), 0); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut at %d: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

// A peer that announces a near-maximal frame and sends little must not make
// the reader allocate the announced size.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	const announced = 16<<20 - 4
	in := binary.BigEndian.AppendUint32(nil, announced)
	in = append(in, make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		if _, err := ReadFrame(bytes.NewReader(in), 0); err != io.ErrUnexpectedEOF {
			t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
		}
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 20*256<<10 {
		t.Fatalf("allocated %d bytes for 20 truncated frames, want < %d", d, 20*256<<10)
	}
}
