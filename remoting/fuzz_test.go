package remoting

import (
	"bytes"
	"testing"
)

// FuzzDecodeFrame checks that no input panics the decoder or the streaming
// reader, that they agree, and that whatever decodes re-encodes to a frame
// that decodes to the same command. Seeds live in testdata/fuzz.
func FuzzDecodeFrame(f *testing.F) {
	for _, c := range roundTripCommands() {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			c.SerializeType = st
			if b, err := c.MarshalFrame(); err == nil {
				f.Add(b)
			}
		}
	}
	const max = 1 << 20
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := DecodeFrame(frame, max)
		r, rerr := ReadFrame(bytes.NewReader(frame), max)
		if err != nil {
			return
		}
		if rerr != nil || !sameCommand(c, r) {
			t.Fatalf("DecodeFrame = %v; ReadFrame = %v, %v", c, r, rerr)
		}
		again, err := c.MarshalFrame()
		if err != nil {
			return // e.g. a binary header that cannot hold a JSON-decoded code
		}
		c2, err := DecodeFrame(again, 0)
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n%q", err, again)
		}
		if !sameCommand(c, c2) {
			t.Fatalf("round trip changed the command:\n got %v\nwant %v", c2, c)
		}
	})
}
