package sql92

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax reports an expression that does not compile; the message says
// what and where (a byte offset).
var ErrSyntax = errors.New("sql92: invalid message selector")

type tokKind uint8

const (
	tEOF tokKind = iota
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tDecimal
	tFloat
	tString
	tID
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tRParen // )
	tComma  // ,
	tPlus   // +
	tMinus  // -
)

// keywords are the reserved words (case-insensitive); they win over ID at
// equal length, as in the JavaCC grammar where they are declared first.
var keywords = map[string]tokKind{"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "IN": tIn,
	"TRUE": tTrue, "FALSE": tFalse, "NULL": tNull, "IS": tIs}

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) String() string {
	if t.kind == tEOF {
		return "end of input"
	}
	return fmt.Sprintf("%q at %d", t.text, t.pos)
}

// lexer produces tokens on demand (longest match, as JavaCC does), so that
// a lexical error after a complete expression is reported only if the
// parser looks that far.
type lexer struct {
	src string
	pos int
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (l *lexer) next() (token, error) {
	for {
		l.skipSpace()
		if l.pos >= len(l.src) {
			return token{kind: tEOF, pos: l.pos}, nil
		}
		if n := l.comment(); n > 0 {
			l.pos += n
			continue
		}
		break
	}
	start, s := l.pos, l.src[l.pos:]
	kind, n, err := l.scan(s)
	if err != nil {
		return token{}, fmt.Errorf("%w: %v at %d", ErrSyntax, err, start)
	}
	l.pos += n
	return token{kind: kind, text: s[:n], pos: start}, nil
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) && strings.IndexByte(" \t\n\r\f", l.src[l.pos]) >= 0 {
		l.pos++
	}
}

// comment returns the length of a complete comment at the position: a
// line comment needs its line end, as in the grammar.
func (l *lexer) comment() int {
	s := l.src[l.pos:]
	switch {
	case strings.HasPrefix(s, "--"):
		if i := strings.IndexAny(s, "\n\r"); i >= 0 {
			if strings.HasPrefix(s[i:], "\r\n") {
				return i + 2
			}
			return i + 1
		}
	case strings.HasPrefix(s, "/*"):
		if i := strings.Index(s[2:], "*/"); i >= 0 {
			return i + 4
		}
	}
	return 0
}

func (l *lexer) scan(s string) (tokKind, int, error) {
	c := s[0]
	switch {
	case isIDStart(c):
		n := 1
		for n < len(s) && (isIDStart(s[n]) || isDigit(s[n])) {
			n++
		}
		if k, ok := keywords[strings.ToUpper(s[:n])]; ok {
			return k, n, nil
		}
		return tID, n, nil
	case isDigit(c) || c == '.' && len(s) > 1 && isDigit(s[1]):
		return scanNumber(s)
	case c == '\'':
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return tString, i + 1, nil
			}
		}
		return 0, 0, errors.New("unterminated string")
	}
	for _, op := range [...]struct {
		text string
		kind tokKind
	}{{"<>", tNe}, {">=", tGe}, {"<=", tLe}, {"=", tEq}, {">", tGt}, {"<", tLt}, {"(", tLParen},
		{")", tRParen}, {",", tComma}, {"+", tPlus}, {"-", tMinus}} {
		if strings.HasPrefix(s, op.text) {
			return op.kind, len(op.text), nil
		}
	}
	return 0, 0, fmt.Errorf("unexpected character %q", rune(c))
}

// scanNumber takes the longest DECIMAL_LITERAL or FLOATING_POINT_LITERAL:
//
//	DECIMAL: "0" | [1-9][0-9]* [lL]?
//	FLOAT:   [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP
//	EXP:     [eE] [+-]? [0-9]+
func scanNumber(s string) (tokKind, int, error) {
	digits := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	exp := func(i int) int { // length after an exponent at i, or i
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if k := digits(j); k > j {
				return k
			}
		}
		return i
	}
	decLen := 1
	if s[0] != '0' {
		decLen = digits(0)
		if decLen < len(s) && (s[decLen] == 'l' || s[decLen] == 'L') {
			decLen++
		}
	}
	if s[0] == '.' {
		decLen = 0
	}
	floatLen := 0
	if i := digits(0); i < len(s) && s[i] == '.' {
		floatLen = exp(digits(i + 1))
	} else if i > 0 {
		if e := exp(i); e > i {
			floatLen = e
		}
	}
	if floatLen > decLen {
		return tFloat, floatLen, nil
	}
	return tDecimal, decLen, nil
}
