package remoting

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// LanguageCode names the implementation language of a command's sender
// (Java LanguageCode). JSON headers carry the name ("JAVA", "GO"), binary
// headers the byte.
type LanguageCode uint8

// Language codes. The values are RocketMQ's: never change them.
const (
	LanguageJava    LanguageCode = 0
	LanguageCPP     LanguageCode = 1
	LanguageDotNet  LanguageCode = 2
	LanguagePython  LanguageCode = 3
	LanguageDelphi  LanguageCode = 4
	LanguageErlang  LanguageCode = 5
	LanguageRuby    LanguageCode = 6
	LanguageOther   LanguageCode = 7
	LanguageHTTP    LanguageCode = 8
	LanguageGo      LanguageCode = 9
	LanguagePHP     LanguageCode = 10
	LanguageOMS     LanguageCode = 11
	LanguageRust    LanguageCode = 12
	LanguageUnknown LanguageCode = 127 // a name this package does not know
)

var languageNames = map[LanguageCode]string{
	LanguageJava: "JAVA", LanguageCPP: "CPP", LanguageDotNet: "DOTNET",
	LanguagePython: "PYTHON", LanguageDelphi: "DELPHI", LanguageErlang: "ERLANG",
	LanguageRuby: "RUBY", LanguageOther: "OTHER", LanguageHTTP: "HTTP",
	LanguageGo: "GO", LanguagePHP: "PHP", LanguageOMS: "OMS", LanguageRust: "RUST",
}

var languageByName = func() map[string]LanguageCode {
	m := make(map[string]LanguageCode, len(languageNames))
	for c, n := range languageNames {
		m[n] = c
	}
	return m
}()

// String returns RocketMQ's name for l, or its number if it has none.
func (l LanguageCode) String() string {
	if n, ok := languageNames[l]; ok {
		return n
	}
	return strconv.Itoa(int(l))
}

// MarshalJSON encodes a known language by name, as Java's fastjson does, and
// any other as a number.
func (l LanguageCode) MarshalJSON() ([]byte, error) {
	if n, ok := languageNames[l]; ok {
		return []byte(`"` + n + `"`), nil
	}
	return []byte(strconv.Itoa(int(l))), nil
}

// UnmarshalJSON accepts a name, an unknown name (LanguageUnknown), a number
// from 0 to 255, or null (LanguageJava, Java's default).
func (l *LanguageCode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*l = LanguageJava
	case string:
		c, ok := languageByName[v]
		if !ok {
			c = LanguageUnknown
		}
		*l = c
	case float64:
		if v < 0 || v > 255 || v != float64(int(v)) {
			return fmt.Errorf("language %v out of range", v)
		}
		*l = LanguageCode(v)
	default:
		return fmt.Errorf("language must be a string or a number, not %s", b)
	}
	return nil
}
