package remoting

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// jsonHeaderOut is the JSON header as Java's fastjson writes it and both the
// Java and the Go clients read it. Field order is the encoding order.
// Remark and extFields are omitted when empty, as fastjson omits nulls; the
// Go client then keeps the empty map it pre-allocates.
type jsonHeaderOut struct {
	Code                    int32             `json:"code"`
	Language                LanguageCode      `json:"language"`
	Version                 int32             `json:"version"`
	Opaque                  int32             `json:"opaque"`
	Flag                    int32             `json:"flag"`
	Remark                  string            `json:"remark,omitempty"`
	ExtFields               map[string]string `json:"extFields,omitempty"`
	SerializeTypeCurrentRPC string            `json:"serializeTypeCurrentRPC"`
}

// jsonHeaderIn is what a JSON header is decoded into. serializeTypeCurrentRPC
// is ignored: the frame's serialize byte is authoritative, as in Java.
type jsonHeaderIn[E any] struct {
	Code      int32        `json:"code"`
	Language  LanguageCode `json:"language"`
	Version   int32        `json:"version"`
	Opaque    int32        `json:"opaque"`
	Flag      int32        `json:"flag"`
	Remark    *string      `json:"remark"`
	ExtFields E            `json:"extFields"`
}

func encodeJSONHeader(c *RemotingCommand) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // remarks stay readable; both clients accept either
	err := enc.Encode(jsonHeaderOut{
		Code: c.Code, Language: c.Language, Version: c.Version, Opaque: c.Opaque,
		Flag: c.Flag, Remark: c.Remark, ExtFields: c.ExtFields,
		SerializeTypeCurrentRPC: SerializeJSON.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// decodeJSONHeader decodes a JSON header. extFields values should be
// strings; numbers and booleans are accepted as their JSON text and nulls
// are dropped, so lenient third-party clients still work.
func decodeJSONHeader(b []byte) (*RemotingCommand, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: JSON header is not an object", ErrBadHeader)
	}
	var strict jsonHeaderIn[map[string]string]
	if err := json.Unmarshal(b, &strict); err == nil {
		return strict.command(strict.ExtFields), nil
	}
	var lax jsonHeaderIn[map[string]json.RawMessage]
	if err := json.Unmarshal(b, &lax); err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", ErrBadHeader, err)
	}
	ext, err := laxExtFields(lax.ExtFields)
	if err != nil {
		return nil, err
	}
	return lax.command(ext), nil
}

func (h *jsonHeaderIn[E]) command(ext map[string]string) *RemotingCommand {
	c := &RemotingCommand{
		Code: h.Code, Language: h.Language, Version: h.Version,
		Opaque: h.Opaque, Flag: h.Flag, ExtFields: ext,
	}
	if h.Remark != nil {
		c.Remark = *h.Remark
	}
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	return c
}

func laxExtFields(raw map[string]json.RawMessage) (map[string]string, error) {
	ext := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%w: extFields %q: %v", ErrBadHeader, k, err)
			}
			ext[k] = s
		case 'n': // null: Java skips null values when serializing
		case '{', '[':
			return nil, fmt.Errorf("%w: extFields %q is not a scalar", ErrBadHeader, k)
		default: // number, true, false
			ext[k] = string(v)
		}
	}
	return ext, nil
}
