package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file decodes JSON request bodies the way the Java broker's
// fastjson 1.2 does, because every 4.x client was written against it:
//
//   - keys match exactly, or else case-insensitively with '_' and '-'
//     ignored (fastjson's smart match: "clientID" and "clientId" are one
//     field); unknown keys are ignored;
//   - null is the same as an absent field;
//   - numbers may come as JSON numbers or as strings ("1796134895301"); an
//     integral float ("3.0") is accepted, a fraction, a value out of the
//     field's range or a non-number is refused;
//   - booleans may be true/false, "true"/"false" (any case), 1/0 or
//     "1"/"0";
//   - strings may come as strings, numbers or booleans (their JSON text);
//   - enums may come by name or by ordinal (a number or a numeric string);
//     an unknown name or an out-of-range ordinal is refused, never mapped
//     to a default.
//
// A refused value is a *fieldError naming the body, the field path and the
// value, which the handlers log at WARN and put in the SYSTEM_ERROR remark.

// fieldError reports a body field the server cannot use.
type fieldError struct {
	Body   string // "heartbeat body"
	Field  string // "consumerDataSet[0].consumeFromWhere"
	Value  string // the JSON text sent, shortened
	Reason string
}

func (e *fieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("bad %s: %s", e.Body, e.Reason)
	}
	return fmt.Sprintf("bad %s: field %s = %s: %s", e.Body, e.Field, e.Value, e.Reason)
}

// errBody is the sentinel every body decoding error wraps.
var errBody = errors.New("bad request body")

func (e *fieldError) Unwrap() error { return errBody }

// jobj is one decoded JSON object with the path it was found at.
type jobj struct {
	m    map[string]any
	path string
	d    *jdec
}

// jdec decodes one body and keeps its first error.
type jdec struct {
	body string
	err  error
}

// decodeObject parses body as one JSON object; numbers keep their text.
func decodeObject(what string, body []byte) (*jdec, jobj, error) {
	d := &jdec{body: what}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return d, jobj{}, &fieldError{Body: what, Reason: "not JSON: " + err.Error()}
	}
	if dec.More() {
		return d, jobj{}, &fieldError{Body: what, Reason: "data after the JSON value"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return d, jobj{}, &fieldError{Body: what, Reason: "not a JSON object"}
	}
	return d, jobj{m: m, d: d}, nil
}

func (d *jdec) fail(path string, v any, reason string) {
	if d.err == nil {
		d.err = &fieldError{Body: d.body, Field: path, Value: shortJSON(v), Reason: reason}
	}
}

// shortJSON renders v for a log line or remark, at most 64 bytes.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 64 {
		return string(b[:61]) + "..."
	}
	return string(b)
}

// normKey is fastjson's smart-match form of a key.
func normKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
}

// get returns the value of key (nil when absent or null) and its path.
func (o jobj) get(key string) (any, string) {
	p := key
	if o.path != "" {
		p = o.path + "." + key
	}
	if v, ok := o.m[key]; ok {
		return v, p
	}
	n := normKey(key)
	for k, v := range o.m {
		if normKey(k) == n {
			return v, p
		}
	}
	return nil, p
}

// has reports whether key is present and not null.
func (o jobj) has(key string) bool {
	v, _ := o.get(key)
	return v != nil
}

// str returns key as a string ("" when absent).
func (o jobj) str(key string) string {
	v, p := o.get(key)
	s, ok := asString(v)
	if !ok {
		o.d.fail(p, v, "not a string")
	}
	return s
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// int returns key as an integer of the given bits (def when absent).
func (o jobj) int(key string, bits int, def int64) int64 {
	v, p := o.get(key)
	if v == nil {
		return def
	}
	n, reason := asInt(v, bits)
	if reason != "" {
		o.d.fail(p, v, reason)
		return def
	}
	return n
}

func asInt(v any, bits int) (int64, string) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case bool:
		// fastjson casts booleans to 1 and 0.
		if x {
			return 1, ""
		}
		return 0, ""
	default:
		return 0, "not a number"
	}
	if n, err := strconv.ParseInt(s, 10, bits); err == nil {
		return n, ""
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Sprintf("out of range for int%d", bits)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "not a number"
	}
	if f != math.Trunc(f) {
		return 0, "not an integer"
	}
	lim := math.Ldexp(1, bits-1)
	if f < -lim || f >= lim {
		return 0, fmt.Sprintf("out of range for int%d", bits)
	}
	return int64(f), ""
}

// boolean returns key as a bool (def when absent).
func (o jobj) boolean(key string, def bool) bool {
	v, p := o.get(key)
	if v == nil {
		return def
	}
	b, ok := asBool(v)
	if !ok {
		o.d.fail(p, v, "not a boolean")
		return def
	}
	return b
}

func asBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case json.Number:
		switch x.String() {
		case "1":
			return true, true
		case "0":
			return false, true
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
	}
	return false, false
}

// enum returns key as an ordinal of names: the name, or the ordinal as a
// number or numeric string. def when absent.
func (o jobj) enum(key string, names []string, def int) int {
	v, p := o.get(key)
	if v == nil {
		return def
	}
	if s, ok := v.(string); ok {
		for i, n := range names {
			if s == n {
				return i
			}
		}
	}
	n, reason := asInt(v, 32)
	if reason != "" {
		o.d.fail(p, v, fmt.Sprintf("not one of %s or an ordinal 0..%d", strings.Join(names, ", "), len(names)-1))
		return def
	}
	if n < 0 || n >= int64(len(names)) {
		o.d.fail(p, v, fmt.Sprintf("ordinal out of range 0..%d", len(names)-1))
		return def
	}
	return int(n)
}

// object returns key as an object (ok false when absent).
func (o jobj) object(key string) (jobj, bool) {
	v, p := o.get(key)
	if v == nil {
		return jobj{}, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		o.d.fail(p, v, "not an object")
		return jobj{}, false
	}
	return jobj{m: m, path: p, d: o.d}, true
}

// objects returns key as an array of objects (a JSON array; fastjson also
// fills Sets and Lists from arrays). max bounds its length.
func (o jobj) objects(key string, max int) []jobj {
	v, p := o.get(key)
	if v == nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		o.d.fail(p, v, "not an array")
		return nil
	}
	if len(arr) > max {
		o.d.fail(p, fmt.Sprintf("%d elements", len(arr)), fmt.Sprintf("more than %d elements", max))
		return nil
	}
	out := make([]jobj, 0, len(arr))
	for i, e := range arr {
		ep := fmt.Sprintf("%s[%d]", p, i)
		if e == nil {
			continue
		}
		m, ok := e.(map[string]any)
		if !ok {
			o.d.fail(ep, e, "not an object")
			return nil
		}
		out = append(out, jobj{m: m, path: ep, d: o.d})
	}
	return out
}

// entries returns key as a JSON object whose values are objects (a Java
// Map<String, T>), sorted by key.
func (o jobj) entries(key string, max int) ([]string, []jobj) {
	obj, ok := o.object(key)
	if !ok {
		return nil, nil
	}
	if len(obj.m) > max {
		o.d.fail(obj.path, fmt.Sprintf("%d entries", len(obj.m)), fmt.Sprintf("more than %d entries", max))
		return nil, nil
	}
	keys := make([]string, 0, len(obj.m))
	for k := range obj.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]jobj, 0, len(keys))
	names := keys[:0:0]
	for _, k := range keys {
		v := obj.m[k]
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			o.d.fail(obj.path+"."+k, v, "not an object")
			return nil, nil
		}
		names = append(names, k)
		out = append(out, jobj{m: m, path: obj.path + "." + k, d: o.d})
	}
	return names, out
}

// asFieldError returns the *fieldError in err's chain, or nil.
func asFieldError(err error) *fieldError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}
