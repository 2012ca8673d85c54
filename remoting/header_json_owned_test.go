package remoting

import (
	"testing"

	"pgregory.net/rapid"
)

// Any command the server might be sent, encoded as the clients encode it
// (a JSON header with escapes for control characters, quotes and
// non-ASCII), decodes in place exactly as through a copy of its header,
// and both give back the command's fields: the values unescaped over
// their own text do not disturb the strings decoded before or after them.
func TestJSONHeaderOwnedDecodeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		codes := []int32{CodeSendMessage, CodeSendMessageV2, CodePullMessage, CodeHeartBeat, 34}
		c := &RemotingCommand{
			Code:      rapid.SampledFrom(codes).Draw(t, "code"),
			Language:  LanguageGo,
			Version:   rapid.Int32().Draw(t, "version"),
			Opaque:    rapid.Int32().Draw(t, "opaque"),
			Remark:    rapid.String().Draw(t, "remark"),
			ExtFields: map[string]string{},
		}
		// Short names, and values mixing plain text with what the JSON
		// encoder escapes (the properties separators \x01 and \x02).
		name := rapid.StringMatching(`[a-zA-Z]{1,8}`)
		value := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'Z', '0', ' ', '\x01', '\x02', '"', '\\', '\n', 'é', '€', '😀', '\u2028'}), 0, 40, -1)
		for range rapid.IntRange(0, 16).Draw(t, "entries") {
			c.ExtFields[name.Draw(t, "name")] = value.Draw(t, "value")
		}
		ext, _ := sortedExt(c.ExtFields, nil)
		header := appendJSONHeader(nil, c, ext)
		copied, err := decodeJSONHeader(header)
		if err != nil {
			t.Fatalf("header %q: %v", header, err)
		}
		own := append([]byte(nil), header...)
		inPlace, err := decodeJSONHeaderOwned(own)
		if err != nil {
			t.Fatalf("header %q decoded in place: %v", header, err)
		}
		if !sameCommand(inPlace, copied) {
			t.Fatalf("header %q:\n copied:   %v\n in place: %v", header, copied, inPlace)
		}
		if inPlace.Code != c.Code || inPlace.Version != c.Version || inPlace.Opaque != c.Opaque || inPlace.Remark != c.Remark {
			t.Fatalf("decoded %v from %v", inPlace, c)
		}
		for k, v := range c.ExtFields {
			if got, ok := inPlace.Ext(k); !ok || got != v {
				t.Fatalf("Ext(%q) = %q, %v; want %q", k, got, ok, v)
			}
		}
		if n := len(inPlace.ExtMap()); n != len(c.ExtFields) {
			t.Fatalf("%d entries decoded, %d sent", n, len(c.ExtFields))
		}
	})
}
