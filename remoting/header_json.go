package remoting

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The JSON header codec is hand-written: encoding/json's reflection, its
// validity pre-scan and one allocation per string made it the largest
// server-side cost. Its behaviour is that of the encoding/json codec it
// replaced, which header_json_ref_test.go keeps as the reference for the
// differential tests and FuzzJSONHeader.
//
// Encoding writes, in this order, code, language (the name, or the number of
// an unnamed code), version, opaque, flag, remark (omitted when empty),
// extFields (omitted when empty; keys sorted) and serializeTypeCurrentRPC,
// the order Java's fastjson uses and both the Java and the Go clients read.
// Strings are escaped as encoding/json escapes them without HTML escaping.
//
// Decoding accepts exactly the inputs encoding/json accepted into the struct
//
//	{Code, Version, Opaque, Flag int32; Language LanguageCode; Remark *string;
//	 ExtFields map[string]string}
//
// and yields the same command, which means:
//   - the header is one JSON object (RFC 8259 syntax, nesting depth at most
//     10000, whitespace around it allowed);
//   - keys match field names exactly or, failing that, case-insensitively
//     with Unicode simple folding; other keys are skipped, whatever their
//     value; a repeated key overwrites, except that repeated extFields
//     objects merge;
//   - code, version, opaque and flag take integer literals that fit int32;
//     null leaves them unchanged;
//   - language takes a name (an unknown name is LanguageUnknown), an
//     integral number from 0 to 255, or null (LanguageJava);
//   - remark takes a string or null ("");
//   - extFields takes an object or null. Its values should be strings; a
//     null value is "" when all values are strings or null. Otherwise (a
//     lenient client) numbers and booleans are kept as their JSON text, null
//     values are dropped, and an object or array that is a key's final
//     value is an error;
//   - strings are unescaped as encoding/json does: \uXXXX surrogate pairs
//     combine, a lone surrogate and every byte of invalid UTF-8 become
//     U+FFFD.
//
// Decoded strings without escapes are substrings of one copy of the header,
// so a kept extFields value keeps that copy (not the frame) alive.

// maxJSONDepth is encoding/json's nesting limit (scanner.maxNestingDepth).
const maxJSONDepth = 10000

// extPair is one extFields entry in encoding order.
type extPair struct{ k, v string }

// appendJSONHeader appends c's JSON header to dst; ext is c.ExtFields in key
// order.
func appendJSONHeader(dst []byte, c *RemotingCommand, ext []extPair) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	if n, ok := languageNames[c.Language]; ok {
		dst = append(dst, '"')
		dst = append(dst, n...)
		dst = append(dst, '"')
	} else {
		dst = strconv.AppendInt(dst, int64(c.Language), 10)
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	if c.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, c.Remark)
	}
	if len(ext) > 0 {
		dst = append(dst, `,"extFields":{`...)
		for i, p := range ext {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, p.k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, p.v)
		}
		dst = append(dst, '}')
	}
	return append(dst, `,"serializeTypeCurrentRPC":"JSON"}`...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes it with HTML
// escaping off: \" \\ \b \f \n \r \t, \u00XX for other control bytes, \ufffd
// for each byte of invalid UTF-8, \u2028 and \u2029.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// JSON header fields, as matched by jsonField.
const (
	fieldUnknown = iota
	fieldCode
	fieldLanguage
	fieldVersion
	fieldOpaque
	fieldFlag
	fieldRemark
	fieldExtFields
)

// foldedFieldNames are the field names folded as encoding/json folds them,
// indexed by field.
var foldedFieldNames = [...]string{
	fieldCode: "CODE", fieldLanguage: "LANGUAGE", fieldVersion: "VERSION",
	fieldOpaque: "OPAQUE", fieldFlag: "FLAG", fieldRemark: "REMARK",
	fieldExtFields: "EXTFIELDS",
}

// jsonField returns the field key names: the exact name, else the name
// equal under encoding/json's folding.
func jsonField(key string) int {
	switch key {
	case "code":
		return fieldCode
	case "language":
		return fieldLanguage
	case "version":
		return fieldVersion
	case "opaque":
		return fieldOpaque
	case "flag":
		return fieldFlag
	case "remark":
		return fieldRemark
	case "extFields":
		return fieldExtFields
	}
	if len(key) > 3*len("EXTFIELDS") { // a rune folds to one rune of at most 3 bytes here
		return fieldUnknown
	}
	for f := fieldCode; f <= fieldExtFields; f++ {
		if foldEqualASCII(key, foldedFieldNames[f]) {
			return f
		}
	}
	return fieldUnknown
}

// foldEqualASCII reports whether encoding/json's foldName(key) equals upper,
// an upper-case ASCII name: whether each rune of key folds to the
// corresponding byte of upper (e.g. U+212A KELVIN SIGN folds to 'K').
func foldEqualASCII(key, upper string) bool {
	i := 0
	for _, r := range key {
		if i == len(upper) {
			return false
		}
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
		} else {
			r = foldRune(r)
		}
		if r != rune(upper[i]) {
			return false
		}
		i++
	}
	return i == len(upper)
}

// foldRune returns the smallest rune of r's fold set (encoding/json's).
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// extValue kinds, recorded for each extFields entry while decoding.
const (
	extString    = iota // a JSON string
	extNull             // null
	extLiteral          // a number, true or false: kept as its text
	extComposite        // an object or an array
)

type extEntry struct {
	k, v string
	kind uint8
}

// jsonDecoder decodes one JSON header held in s.
type jsonDecoder struct {
	s   string
	pos int
	// own, when set, is the memory s aliases, owned by the decoded
	// command (decodeJSONHeaderOwned): an escaped string's value is
	// written over its escaped text, which it never outgrows, instead of
	// into a new allocation.
	own []byte
}

func (d *jsonDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: JSON header at offset %d: %s", ErrBadHeader, d.pos, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) skipWS() {
	for d.pos < len(d.s) {
		switch d.s[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the byte at pos, or 0 at the end.
func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.s) {
		return d.s[d.pos]
	}
	return 0
}

// expect consumes c, after optional whitespace.
func (d *jsonDecoder) expect(c byte) error {
	d.skipWS()
	if d.peek() != c {
		return d.unexpected(fmt.Sprintf("%q", c))
	}
	d.pos++
	return nil
}

func (d *jsonDecoder) unexpected(want string) error {
	if d.pos >= len(d.s) {
		return d.errorf("unexpected end, want %s", want)
	}
	return d.errorf("unexpected %q, want %s", d.s[d.pos], want)
}

// decodeJSONHeader decodes a JSON header; the package comment above
// header_json.go's types says what it accepts.
func decodeJSONHeader(b []byte) (*RemotingCommand, error) {
	return decodeJSON(jsonDecoder{s: string(b)})
}

// decodeJSONHeaderOwned is decodeJSONHeader for a header the decoded
// command may own: its strings alias b instead of a copy of it, and
// escaped values are unescaped in place, so that decoding a send's
// header allocates the command only. b must not change afterwards (a
// frame read from a connection: its buffer is the command's).
func decodeJSONHeaderOwned(b []byte) (*RemotingCommand, error) {
	if len(b) == 0 {
		return decodeJSON(jsonDecoder{})
	}
	return decodeJSON(jsonDecoder{s: unsafe.String(unsafe.SliceData(b), len(b)), own: b})
}

// inPlaceAtHeaderStart is a broken variant for tests: an escaped value
// is unescaped over the header's first bytes instead of its own text,
// overwriting the strings decoded before it.
// TestJSONHeaderOwnedDecodeBrokenVariant shows the differential tests
// catch it.
var inPlaceAtHeaderStart = false

func decodeJSON(d jsonDecoder) (*RemotingCommand, error) {
	d.skipWS()
	if d.peek() != '{' {
		return nil, fmt.Errorf("%w: JSON header is not an object", ErrBadHeader)
	}
	d.pos++
	var cv RemotingCommand // copied into the allocation returned
	c := &cv
	var (
		entriesBuf [16]extEntry
		entries    = entriesBuf[:0]
		extSet     bool // extFields was last set to an object
		lenient    bool // some extFields value was not a string or null
	)
	d.skipWS()
	if d.peek() == '}' {
		d.pos++
	} else {
		for {
			d.skipWS()
			if d.peek() != '"' {
				return nil, d.unexpected("a key")
			}
			key, err := d.str()
			if err != nil {
				return nil, err
			}
			if err := d.expect(':'); err != nil {
				return nil, err
			}
			d.skipWS()
			switch f := jsonField(key); f {
			case fieldCode, fieldVersion, fieldOpaque, fieldFlag:
				err = d.int32Field(c, f)
			case fieldLanguage:
				err = d.language(&c.Language)
			case fieldRemark:
				err = d.remark(&c.Remark)
			case fieldExtFields:
				if d.peek() == 'n' {
					if err = d.literal("null"); err == nil {
						entries, extSet = entries[:0], false
					}
					break
				}
				extSet = true
				entries, err = d.extFields(entries, &lenient)
			default:
				err = d.skipValue(1)
			}
			if err != nil {
				return nil, err
			}
			d.skipWS()
			if d.peek() == ',' {
				d.pos++
				continue
			}
			if d.peek() == '}' {
				d.pos++
				break
			}
			return nil, d.unexpected("',' or '}'")
		}
	}
	d.skipWS()
	if d.pos != len(d.s) {
		return nil, d.errorf("data after the header object")
	}
	if !c.IsResponse() && leanRequest(c.Code) && !lenient {
		// A hot request keeps its entries, not a map (extlean.go); null
		// entries hold "", as in the map.
		if !extSet {
			entries = entries[:0]
		}
		lc := newLeanCommand(c, len(entries))
		for _, e := range entries {
			lc.ext = append(lc.ext, extPair{e.k, e.v})
		}
		return lc, nil
	}
	ext, err := buildExtFields(entries, extSet, lenient)
	if err != nil {
		return nil, err
	}
	out := new(RemotingCommand)
	*out = cv
	out.ExtFields = ext
	return out, nil
}

// buildExtFields makes the extFields map from its entries in input order,
// later entries overwriting earlier ones.
func buildExtFields(entries []extEntry, extSet, lenient bool) (map[string]string, error) {
	if !extSet || len(entries) == 0 {
		return map[string]string{}, nil
	}
	m := make(map[string]string, len(entries))
	if !lenient {
		for _, e := range entries {
			m[e.k] = e.v // null entries hold ""
		}
		return m, nil
	}
	var composite map[string]struct{} // keys whose latest value is an object or array
	for _, e := range entries {
		switch e.kind {
		case extNull:
			delete(m, e.k)
		case extComposite:
			delete(m, e.k)
			if composite == nil {
				composite = map[string]struct{}{}
			}
			composite[e.k] = struct{}{}
			continue
		default:
			m[e.k] = e.v
		}
		delete(composite, e.k)
	}
	for k := range composite {
		return nil, fmt.Errorf("%w: extFields %q is not a scalar", ErrBadHeader, k)
	}
	return m, nil
}

// extFields decodes the extFields object at pos (or fails if it is not an
// object), appending its entries.
func (d *jsonDecoder) extFields(entries []extEntry, lenient *bool) ([]extEntry, error) {
	if d.peek() != '{' {
		return nil, d.errorf("extFields is not an object")
	}
	d.pos++
	d.skipWS()
	if d.peek() == '}' {
		d.pos++
		return entries, nil
	}
	for {
		d.skipWS()
		if d.peek() != '"' {
			return nil, d.unexpected("an extFields key")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if err := d.expect(':'); err != nil {
			return nil, err
		}
		d.skipWS()
		e := extEntry{k: k}
		switch d.peek() {
		case '"':
			e.v, err = d.str()
		case 'n':
			e.kind = extNull
			err = d.literal("null")
		case '{', '[':
			e.kind = extComposite
			*lenient = true
			err = d.skipValue(2)
		default:
			e.kind = extLiteral
			*lenient = true
			e.v, err = d.scalarLiteral()
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
		d.skipWS()
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return entries, nil
		default:
			return nil, d.unexpected("',' or '}' in extFields")
		}
	}
}

// scalarLiteral consumes a number, true or false and returns its text.
func (d *jsonDecoder) scalarLiteral() (string, error) {
	start := d.pos
	var err error
	switch d.peek() {
	case 't':
		err = d.literal("true")
	case 'f':
		err = d.literal("false")
	default:
		_, err = d.number()
	}
	return d.s[start:d.pos], err
}

// int32Field decodes an integer literal that fits int32 into field f of c;
// null leaves it unchanged.
func (d *jsonDecoder) int32Field(c *RemotingCommand, f int) error {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	start := d.pos
	isInt, err := d.number()
	if err != nil {
		return err
	}
	lit := d.s[start:d.pos]
	if !isInt {
		return d.errorf("%s is not an integer", lit)
	}
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
		if n > 1<<31 {
			return d.errorf("%s overflows int32", lit)
		}
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 {
		return d.errorf("%s overflows int32", lit)
	}
	v := int32(n)
	switch f {
	case fieldCode:
		c.Code = v
	case fieldVersion:
		c.Version = v
	case fieldOpaque:
		c.Opaque = v
	case fieldFlag:
		c.Flag = v
	}
	return nil
}

// language decodes a language as LanguageCode.UnmarshalJSON does.
func (d *jsonDecoder) language(l *LanguageCode) error {
	switch c := d.peek(); {
	case c == 'n':
		if err := d.literal("null"); err != nil {
			return err
		}
		*l = LanguageJava
	case c == '"':
		name, err := d.str()
		if err != nil {
			return err
		}
		code, ok := languageByName[name]
		if !ok {
			code = LanguageUnknown
		}
		*l = code
	case c == '-' || '0' <= c && c <= '9':
		start := d.pos
		if _, err := d.number(); err != nil {
			return err
		}
		v, err := strconv.ParseFloat(d.s[start:d.pos], 64)
		if err != nil {
			return d.errorf("language: %v", err)
		}
		if v < 0 || v > 255 || v != float64(int(v)) {
			return d.errorf("language %v out of range", v)
		}
		*l = LanguageCode(v)
	default:
		return d.errorf("language must be a string or a number")
	}
	return nil
}

// remark decodes a string or null (""). Any other value is an error, after
// which the command is discarded.
func (d *jsonDecoder) remark(r *string) error {
	switch d.peek() {
	case 'n':
		*r = ""
		return d.literal("null")
	case '"':
		s, err := d.str()
		*r = s
		return err
	}
	return d.errorf("remark is not a string")
}

// literal consumes lit (true, false or null).
func (d *jsonDecoder) literal(lit string) error {
	if len(d.s)-d.pos < len(lit) || d.s[d.pos:d.pos+len(lit)] != lit {
		return d.unexpected(lit)
	}
	d.pos += len(lit)
	return nil
}

// number consumes a JSON number and reports whether it is an integer
// literal (no fraction, no exponent).
func (d *jsonDecoder) number() (isInt bool, err error) {
	s, i := d.s, d.pos
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i++
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		d.pos = i
		return false, d.unexpected("a value")
	}
	isInt = true
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			d.pos = i
			return false, d.unexpected("a digit")
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			d.pos = i
			return false, d.unexpected("a digit")
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	d.pos = i
	return isInt, nil
}

// jsonPlain marks the bytes a JSON string holds as they are: printable
// ASCII other than '"' and '\\'.
var jsonPlain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString consumes the string at pos (which is '"') and returns its
// contents still escaped, whether it has escapes and whether it has bytes
// beyond ASCII.
func (d *jsonDecoder) scanString() (raw string, escaped, high bool, err error) {
	s := d.s
	start := d.pos + 1
	for i := start; i < len(s); {
		// Most of a header is plain ASCII: skip it a byte at a time
		// without the cases below (the properties value of a send is
		// its longest string).
		for i < len(s) && jsonPlain[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return s[start:i], escaped, high, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(s) {
				d.pos = len(s)
				return "", false, false, d.unexpected("an escape")
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(s, i+2) < 0 {
					d.pos = i
					return "", false, false, d.errorf("bad \\u escape")
				}
				i += 6
			default:
				d.pos = i + 1
				return "", false, false, d.errorf("bad escape")
			}
		case c < ' ':
			d.pos = i
			return "", false, false, d.errorf("control character in string")
		default:
			if c >= utf8.RuneSelf {
				high = true
			}
			i++
		}
	}
	d.pos = len(s)
	return "", false, false, d.unexpected("the end of a string")
}

// str consumes the string at pos and returns its value.
func (d *jsonDecoder) str() (string, error) {
	raw, escaped, high, err := d.scanString()
	if err != nil {
		return "", err
	}
	if !escaped && (!high || utf8.ValidString(raw)) {
		return raw, nil
	}
	var buf [256]byte // most values fit: then the string is the only allocation
	b := appendUnquoted(buf[:0], raw)
	if d.own != nil && len(b) <= len(raw) {
		// The escaped text ends at the closing quote before pos.
		at := d.pos - 1 - len(raw)
		if inPlaceAtHeaderStart { // broken variant (tests only)
			at = 0
		}
		n := copy(d.own[at:at+len(raw)], b)
		return unsafe.String(&d.own[at], n), nil
	}
	return string(b), nil
}

// hex4 returns the value of the 4 hex digits at s[i:], or -1.
func hex4(s string, i int) rune {
	if len(s)-i < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendUnquoted appends the unescaped contents of a string that
// scanString accepted to b, as encoding/json's unquoteBytes unescapes: a
// valid surrogate pair combines, a lone surrogate becomes U+FFFD and so
// does each byte of invalid UTF-8 (the one case where the value can be
// longer than its text).
func appendUnquoted(b []byte, s string) []byte {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s, r+2)
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s, r+2)); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRuneInString(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return b
}

// skipValue consumes one JSON value of any kind at pos, checking its syntax;
// depth is the nesting depth of the container holding it.
func (d *jsonDecoder) skipValue(depth int) error {
	var stackBuf [32]byte
	stack := stackBuf[:0] // '{' or '[' for each open container
	for {
		// A value is expected at pos.
		d.skipWS()
		switch c := d.peek(); {
		case c == '{' || c == '[':
			d.pos++
			stack = append(stack, c)
			if depth+len(stack) > maxJSONDepth {
				return d.errorf("exceeded max depth %d", maxJSONDepth)
			}
			d.skipWS()
			if c == '{' && d.peek() == '}' || c == '[' && d.peek() == ']' {
				d.pos++
				stack = stack[:len(stack)-1]
				break
			}
			if c == '{' {
				if err := d.skipKey(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, _, _, err := d.scanString(); err != nil {
				return err
			}
		case c == 't':
			if err := d.literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := d.literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := d.literal("null"); err != nil {
				return err
			}
		default:
			if _, err := d.number(); err != nil {
				return err
			}
		}
		// A value ended: close containers until one continues.
		for {
			if len(stack) == 0 {
				return nil
			}
			d.skipWS()
			top := stack[len(stack)-1]
			c := d.peek()
			if c == ',' {
				d.pos++
				if top == '{' {
					if err := d.skipKey(); err != nil {
						return err
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				d.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			return d.unexpected("',' or the end of a container")
		}
	}
}

// skipKey consumes an object key and its colon.
func (d *jsonDecoder) skipKey() error {
	d.skipWS()
	if d.peek() != '"' {
		return d.unexpected("a key")
	}
	if _, _, _, err := d.scanString(); err != nil {
		return err
	}
	return d.expect(':')
}
