package sql92

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// kind is the Java class of a value: RocketMQ's expressions evaluate to
// null, Boolean, Integer, Long, Double or String.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt  // java.lang.Integer
	kLong // java.lang.Long
	kDouble
	kString
)

type value struct {
	k kind
	b bool
	i int64 // kInt (in int32 range) and kLong
	f float64
	s string
}

var (
	null   = value{}
	vTrue  = value{k: kBool, b: true}
	vFalse = value{k: kBool}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

func (v value) String() string {
	switch v.k {
	case kNull:
		return "NULL"
	case kBool:
		if v.b {
			return "TRUE"
		}
		return "FALSE"
	case kInt, kLong:
		return strconv.FormatInt(v.i, 10)
	case kDouble:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEN") { // keep it a float literal
			s += ".0"
		}
		return s
	}
	return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
}

// errEval is an evaluation failure (Java's RuntimeException during
// evaluate): the message does not match.
var errEval = errors.New("sql92: evaluation failed")

// equals is Java's Object.equals between two non-null values of our kinds.
func equals(l, r value) bool {
	if l.k != r.k {
		return false
	}
	switch l.k {
	case kBool:
		return l.b == r.b
	case kInt, kLong:
		return l.i == r.i
	case kDouble: // Double.equals compares the bits: NaN equals NaN, 0.0 is not -0.0
		return math.Float64bits(l.f) == math.Float64bits(r.f)
	}
	return l.s == r.s
}

// compare is ComparisonExpression.__compare with convertStringExpressions
// set (SelectorParser.parse sets it for every expression it builds): a
// value of another type is converted to the left operand's type where
// Java does so; incomparable types give -1; a string that does not
// convert is an error.
func compare(l, r value) (int, error) {
	if l.k != r.k {
		var err error
		if l, r, err = promote(l, r); err != nil {
			return 0, err
		}
		if l.k != r.k {
			return -1, nil
		}
	}
	switch l.k {
	case kBool:
		return cmpBool(l.b, r.b), nil
	case kInt, kLong:
		return cmp.Compare(l.i, r.i), nil
	case kDouble:
		return javaDoubleCompare(l.f, r.f), nil
	case kString:
		return strings.Compare(l.s, r.s), nil
	}
	return -1, nil
}

// promote converts one operand as __compare does; operands left of
// different kinds afterwards are incomparable.
func promote(l, r value) (value, value, error) {
	var err error
	switch l.k {
	case kBool:
		if r.k == kString {
			// Java casts the Boolean to String here and throws.
			return l, r, fmt.Errorf("%w: cannot compare %v with %v", errEval, l, r)
		}
	case kInt:
		switch r.k {
		case kLong:
			l.k = kLong
		case kDouble:
			l = value{k: kDouble, f: float64(l.i)}
		case kString:
			r, err = parseInteger(r.s, kInt)
		}
	case kLong:
		switch r.k {
		case kInt:
			r.k = kLong
		case kDouble:
			l = value{k: kDouble, f: float64(l.i)}
		case kString:
			r, err = parseInteger(r.s, kLong)
		}
	case kDouble:
		switch r.k {
		case kInt, kLong:
			r = value{k: kDouble, f: float64(r.i)}
		case kString:
			r, err = parseDouble(r.s)
		}
	case kString:
		switch r.k {
		case kBool:
			l = boolValue(strings.EqualFold(l.s, "true")) // Boolean.valueOf
		case kInt, kLong:
			l, err = parseInteger(l.s, r.k)
		case kDouble:
			l, err = parseDouble(l.s)
		}
	}
	return l, r, err
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// javaDoubleCompare is Double.compare: -0.0 < 0.0, NaN above everything
// and equal to itself.
func javaDoubleCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if math.IsNaN(a) {
		ab = 0x7ff8000000000000
	}
	if math.IsNaN(b) {
		bb = 0x7ff8000000000000
	}
	return cmp.Compare(ab, bb)
}

// parseInteger is Integer.valueOf (k == kInt) or Long.valueOf: an
// optional sign and ASCII digits, nothing else, in range.
func parseInteger(s string, k kind) (value, error) {
	bits := 64
	if k == kInt {
		bits = 32
	}
	body := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if body == "" || strings.TrimLeft(body, "0123456789") != "" || len(s)-len(body) > 1 {
		return null, fmt.Errorf("%w: %q is not a number", errEval, s)
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return null, fmt.Errorf("%w: %q: %v", errEval, s, err)
	}
	return value{k: k, i: n}, nil
}

// javaDouble is the syntax Double.valueOf accepts after trimming.
var javaDouble = regexp.MustCompile(`^[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)$`)

// parseDouble is Double.valueOf: leading and trailing characters <= ' '
// are trimmed; NaN and Infinity are spelled as in Java; an f/F/d/D suffix
// is allowed; hexadecimal needs its binary exponent.
func parseDouble(s string) (value, error) {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if !javaDouble.MatchString(t) {
		return null, fmt.Errorf("%w: %q is not a double", errEval, s)
	}
	if n := len(t); strings.ContainsAny(t[n-1:], "fFdD") && !strings.HasSuffix(t, "NaN") && !strings.HasSuffix(t, "Infinity") &&
		!(strings.ContainsAny(t, "xX") && !strings.ContainsAny(t, "pP")) {
		t = t[:n-1]
	}
	t = strings.Replace(strings.Replace(t, "Infinity", "Inf", 1), "NaN", "NaN", 1)
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return null, fmt.Errorf("%w: %q: %v", errEval, s, err)
	}
	return value{k: kDouble, f: f}, nil
}
