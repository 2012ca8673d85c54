package admin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Marshal writes v as fastjson does: struct fields sorted by their JSON
// name, integer map keys bare and struct map keys as objects. Fields
// tagged omitempty are left out when empty, as fastjson leaves out null
// values.
func Marshal(v any) ([]byte, error) {
	return appendValue(nil, reflect.ValueOf(v))
}

func appendValue(dst []byte, v reflect.Value) ([]byte, error) {
	if !v.IsValid() {
		return append(dst, "null"...), nil
	}
	if _, ok := v.Interface().(json.Marshaler); ok {
		b, err := json.Marshal(v.Interface())
		return append(dst, b...), err
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendValue(dst, v.Elem())
	case reflect.Struct:
		return appendStruct(dst, v)
	case reflect.Map:
		return appendMap(dst, v)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(dst, "[]"...), nil
		}
		dst = append(dst, '[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, v.Index(i)); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // fastjson writes doubles with a fraction
		}
		return append(dst, s...), nil
	}
	b, err := json.Marshal(v.Interface())
	return append(dst, b...), err
}

type field struct {
	name      string
	index     int
	omitEmpty bool
}

func structFields(t reflect.Type) []field {
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		fs = append(fs, field{name: name, index: i, omitEmpty: strings.Contains(opts, "omitempty")})
	}
	slices.SortFunc(fs, func(a, b field) int { return strings.Compare(a.name, b.name) })
	return fs
}

func appendStruct(dst []byte, v reflect.Value) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for _, f := range structFields(v.Type()) {
		fv := v.Field(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		if (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Map) && fv.IsNil() {
			continue // fastjson leaves out nulls
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = strconv.AppendQuote(dst, f.name)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, fv); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendMap(dst []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(dst, "null"...), nil
	}
	type kv struct {
		key []byte
		val reflect.Value
	}
	entries := make([]kv, 0, v.Len())
	it := v.MapRange()
	for it.Next() {
		k := it.Key()
		var kb []byte
		var err error
		switch k.Kind() {
		case reflect.String:
			kb, err = json.Marshal(k.String())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			kb = strconv.AppendInt(nil, k.Int(), 10)
		case reflect.Struct:
			kb, err = appendStruct(nil, k)
		default:
			err = fmt.Errorf("admin: map key type %s", k.Type())
		}
		if err != nil {
			return dst, err
		}
		entries = append(entries, kv{kb, it.Value()})
	}
	// Sorted keys make the output deterministic (fastjson's HashMap order
	// is not, so readers must not depend on it).
	slices.SortFunc(entries, func(a, b kv) int { return strings.Compare(string(a.key), string(b.key)) })
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.key...)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, e.val); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// Normalize turns fastjson into JSON: a bare integer key becomes a
// string ("0"), and an object key becomes a string holding the object's
// text. Strings are copied untouched; valid JSON comes back unchanged.
func Normalize(src []byte) ([]byte, error) {
	out := make([]byte, 0, len(src)+32)
	var stack []byte // '{' or '['
	keyPos := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '"':
			end, err := stringEnd(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, src[i:end]...)
			i = end - 1
			keyPos = false
			continue
		case keyPos && c == '{':
			end, err := valueEnd(src, i)
			if err != nil {
				return nil, err
			}
			out = strconv.AppendQuote(out, string(src[i:end]))
			i = end - 1
			keyPos = false
			continue
		case keyPos && (c == '-' || (c >= '0' && c <= '9')):
			j := i + 1
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			out = append(out, '"')
			out = append(out, src[i:j]...)
			out = append(out, '"')
			i = j - 1
			keyPos = false
			continue
		case c == '{' || c == '[':
			stack = append(stack, c)
			keyPos = c == '{'
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			keyPos = false
		case c == ',':
			keyPos = len(stack) > 0 && stack[len(stack)-1] == '{'
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			keyPos = false
		}
		out = append(out, c)
	}
	return out, nil
}

// stringEnd returns the index after the string starting at src[i] == '"'.
func stringEnd(src []byte, i int) (int, error) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("admin: unterminated string at byte %d", i)
}

// valueEnd returns the index after the object or array at src[i].
func valueEnd(src []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '"':
			end, err := stringEnd(src, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("admin: unterminated object at byte %d", i)
}

// Unmarshal reads fastjson (or JSON) into v. Maps keyed by MessageQueue
// are read by the body types' UnmarshalJSON methods.
func Unmarshal(data []byte, v any) error {
	n, err := Normalize(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(n, v)
}
