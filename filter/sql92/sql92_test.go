package sql92

import (
	"errors"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, s string) *Expression {
	t.Helper()
	e, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile(%q): %v", s, err)
	}
	return e
}

// TestNullSemantics is the behaviour RocketMQ's documentation gives for
// SQL attribute filters (a property the message lacks is NULL, and a
// message is delivered only when the whole expression is TRUE), with the
// results of RocketMQ 4.9's expression classes for each row.
func TestNullSemantics(t *testing.T) {
	none := map[string]string{}
	a10 := map[string]string{"a": "10"}
	for _, c := range []struct {
		expr  string
		props map[string]string
		want  Result
	}{
		{"a IS NULL", none, True},
		{"a IS NULL", a10, False},
		{"a IS NOT NULL", none, False},
		{"a IS NOT NULL", a10, True},
		{"a > 5", none, Unknown},
		{"a > 5", a10, True},
		{"a < 5", a10, False},
		{"NOT (a > 5)", none, Unknown},
		{"a = 10", none, Unknown},
		{"a = 10", a10, True},
		{"a <> 10", none, Unknown},
		{"a <> 10", a10, False},
		// RocketMQ's doCreateEqual is asymmetric: NULL on the right is FALSE.
		{"10 = a", none, False},
		{"10 <> a", none, True},
		{"a BETWEEN 1 AND 20", none, Unknown},
		{"a BETWEEN 1 AND 20", a10, True},
		{"a NOT BETWEEN 1 AND 20", a10, False},
		{"a NOT BETWEEN 1 AND 20", none, Unknown},
		{"a IN ('10', '11')", none, Unknown},
		{"a IN ('10', '11')", a10, True},
		{"a NOT IN ('10', '11')", none, Unknown},
		{"a NOT IN ('1')", a10, True},
		// Three-valued AND / OR.
		{"a > 5 AND b > 5", a10, Unknown},
		{"a < 5 AND b > 5", a10, False},
		{"a > 5 OR b > 5", a10, True},
		{"a < 5 OR b > 5", a10, Unknown},
		{"b IS NULL OR b = 'x'", a10, True},
		{"b > 1 OR b IS NULL", a10, True},
		// Booleans and strings.
		{"a = TRUE", map[string]string{"a": "TRUE"}, True},
		{"a = FALSE", map[string]string{"a": "yes"}, True}, // Boolean.valueOf("yes") is false
		{"a = TRUE", map[string]string{"a": "yes"}, False},
		{"TRUE", none, True},
		{"NULL", none, Unknown},
		{"a", none, Unknown},
		{"a", map[string]string{"a": "true"}, False}, // a property is a string, never Boolean
		{"s = 'it''s'", map[string]string{"s": "it's"}, True},
		// Numbers: the string converts to the constant's type; a failure
		// does not match.
		{"a > 5.5", map[string]string{"a": "5.75"}, True},
		{"a > 5", map[string]string{"a": "5.75"}, Unknown},        // Integer.valueOf("5.75") throws
		{"a > 5", map[string]string{"a": "3000000000"}, Unknown},  // out of Integer range
		{"a > 5L", map[string]string{"a": "3000000000"}, Unknown}, // 5L fits an Integer, so it is one
		{"a > 2147483648", map[string]string{"a": "3000000000"}, True},
		{"a > b", map[string]string{"a": "2.5", "b": "10"}, False}, // two strings: as doubles
		{"a > b", map[string]string{"a": "x", "b": "10"}, Unknown},
		{"a = 10", map[string]string{"a": "010"}, True},
		{"a = 10.0", map[string]string{"a": "1e1"}, True},
		{"a = -5", map[string]string{"a": "-5"}, True},
		{"a > -5", map[string]string{"a": "-4"}, True},
		{"a = 'x'", map[string]string{"a": "x"}, True},
		{"a = 5", map[string]string{"a": "x"}, Unknown},
		{"a >= 1 AND a <= 3", map[string]string{"a": "3"}, True},
		{"NOT a = 1", map[string]string{"a": "2"}, False}, // (NOT a) = 1: FALSE = 1 is FALSE
		{"NOT (a = 1)", map[string]string{"a": "2"}, True},
		{"a = 1 = TRUE", map[string]string{"a": "1"}, True},
		{"-a = 1", map[string]string{"a": "-1"}, Unknown}, // negating a string is NULL
		{"a > 1 garbage", a10, True},                      // the rest is ignored, as in RocketMQ
	} {
		e := mustCompile(t, c.expr)
		got, _ := e.Evaluate(c.props)
		if got != c.want {
			t.Errorf("%s with %v: %v, want %v", c.expr, c.props, got, c.want)
		}
		if e.Match(c.props) != (c.want == True) {
			t.Errorf("%s with %v: Match disagrees with Evaluate", c.expr, c.props)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, s := range []string{
		"", "   ", "a >", "a > 'x'", "'x' < a", "a > TRUE", "a = NULL", "NULL = a", "TRUE = 1",
		"a BETWEEN 5 AND 1", "a BETWEEN NULL AND 1", "a BETWEEN 'a' AND 'b'", "1 IN ('a')", "a IN ()",
		"a IN (1, 2)", "5", "'abc'", "-a", "a > 0.0", "a > 1e400", "a > 99999999999999999999",
		"a IS 5", "(a > 1", "a > 'unterminated", "a > 1 AND 5", "NOT 5", "a ! b", "a == 1", "(a > 1) > 2",
		"a > 1 /* open comment", strings.Repeat("(", 500) + "a" + strings.Repeat(")", 500),
		strings.Repeat("NOT ", 500) + "a",
	} {
		if _, err := Compile(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("Compile(%q) = %v, want ErrSyntax", s, err)
		}
	}
}

func TestCompileAccepts(t *testing.T) {
	for _, s := range []string{
		"a > 5", "A IS NOT NULL and b between 1 AND 2 Or c in ('x')", "$x_1 = 'y'", "a > .5", "a > 5.", "a < 5E3",
		"a = 5l", "a > -5.5e-3", "a > +3", "a > 1 -- comment\n", "/* c */ a = 'x'", "(a > 1) AND (b < 2)",
		"a NOT IN ('1', '2', '3', '4', '5', '6')", "TRUE AND a", "1 = TRUE", "a = 1 > 0",
		"a > 1 -- unterminated comment is not read", // the parser stops before it
	} {
		if _, err := Compile(s); err != nil {
			t.Errorf("Compile(%q): %v", s, err)
		}
	}
}

func TestJavaConversions(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
		f  float64
	}{{"1.5", true, 1.5}, {" 2 ", true, 2}, {"3f", true, 3}, {"1e2d", true, 100}, {"-Infinity", true, 0},
		{"inf", false, 0}, {"1_0", false, 0}, {"0x1p4", true, 16}, {"", false, 0}, {"1.2.3", false, 0}} {
		v, err := parseDouble(c.s)
		if (err == nil) != c.ok || (c.ok && c.f != 0 && v.f != c.f) {
			t.Errorf("parseDouble(%q) = %v, %v", c.s, v, err)
		}
	}
	for _, c := range []struct {
		s  string
		k  kind
		ok bool
	}{{"+5", kInt, true}, {"-5", kInt, true}, {"2147483648", kInt, false}, {"2147483648", kLong, true},
		{" 5", kInt, false}, {"5.0", kInt, false}, {"--5", kInt, false}, {"+-5", kInt, false}, {"", kInt, false}} {
		if _, err := parseInteger(c.s, c.k); (err == nil) != c.ok {
			t.Errorf("parseInteger(%q, %v): %v", c.s, c.k, err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"a > 5", "a IS NOT NULL AND b IN ('x', 'y')", "a BETWEEN -1 AND 2.5e3",
		"NOT (a = 'it''s') OR b <> 3L", "/* c */ a -- x\n = 1", "(((a)))", "a > .5E-3"} {
		f.Add(s, "a", "3")
	}
	f.Fuzz(func(t *testing.T, expr, k, v string) {
		e, err := Compile(expr)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		props := map[string]string{k: v}
		r, _ := e.Evaluate(props)
		if e.Match(props) != (r == True) {
			t.Fatalf("Match and Evaluate disagree on %q", expr)
		}
		// The printed form compiles to an expression with the same result.
		e2, err := Compile(e.root.String())
		if err != nil {
			t.Fatalf("%q printed as %q, which does not compile: %v", expr, e.root.String(), err)
		}
		if r2, _ := e2.Evaluate(props); r2 != r {
			t.Fatalf("%q = %v but its printed form %q = %v", expr, r, e.root.String(), r2)
		}
	})
}
