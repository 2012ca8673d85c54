package remoting

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// This file keeps the encoding/json header codec that header_json.go
// replaced, as the reference for the differential tests and FuzzJSONHeader.
// Do not "fix" it: its behaviour is the specification.

// refJSONHeaderOut is the JSON header as Java's fastjson writes it and both
// the Java and the Go clients read it. Field order is the encoding order.
type refJSONHeaderOut struct {
	Code                    int32             `json:"code"`
	Language                LanguageCode      `json:"language"`
	Version                 int32             `json:"version"`
	Opaque                  int32             `json:"opaque"`
	Flag                    int32             `json:"flag"`
	Remark                  string            `json:"remark,omitempty"`
	ExtFields               map[string]string `json:"extFields,omitempty"`
	SerializeTypeCurrentRPC string            `json:"serializeTypeCurrentRPC"`
}

type refJSONHeaderIn[E any] struct {
	Code      int32        `json:"code"`
	Language  LanguageCode `json:"language"`
	Version   int32        `json:"version"`
	Opaque    int32        `json:"opaque"`
	Flag      int32        `json:"flag"`
	Remark    *string      `json:"remark"`
	ExtFields E            `json:"extFields"`
}

func refEncodeJSONHeader(c *RemotingCommand) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(refJSONHeaderOut{
		Code: c.Code, Language: c.Language, Version: c.Version, Opaque: c.Opaque,
		Flag: c.Flag, Remark: c.Remark, ExtFields: c.ExtFields,
		SerializeTypeCurrentRPC: SerializeJSON.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func refDecodeJSONHeader(b []byte) (*RemotingCommand, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: JSON header is not an object", ErrBadHeader)
	}
	var strict refJSONHeaderIn[map[string]string]
	if err := json.Unmarshal(b, &strict); err == nil {
		return strict.command(strict.ExtFields), nil
	}
	var lax refJSONHeaderIn[map[string]json.RawMessage]
	if err := json.Unmarshal(b, &lax); err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", ErrBadHeader, err)
	}
	ext, err := refLaxExtFields(lax.ExtFields)
	if err != nil {
		return nil, err
	}
	return lax.command(ext), nil
}

func (h *refJSONHeaderIn[E]) command(ext map[string]string) *RemotingCommand {
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

func refLaxExtFields(raw map[string]json.RawMessage) (map[string]string, error) {
	ext := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%w: extFields %q: %v", ErrBadHeader, k, err)
			}
			ext[k] = s
		case 'n':
		case '{', '[':
			return nil, fmt.Errorf("%w: extFields %q is not a scalar", ErrBadHeader, k)
		default:
			ext[k] = string(v)
		}
	}
	return ext, nil
}
