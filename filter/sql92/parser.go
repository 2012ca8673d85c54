package sql92

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds nesting so that a hostile expression cannot exhaust
// the stack.
const maxDepth = 200

// parser is a recursive-descent version of SelectorParser.jj.
type parser struct {
	lex   lexer
	buf   []token // looked-ahead tokens
	depth int
}

func (p *parser) peek(i int) (token, error) {
	for len(p.buf) <= i {
		t, err := p.lex.next()
		if err != nil {
			return token{}, err
		}
		p.buf = append(p.buf, t)
	}
	return p.buf[i], nil
}

func (p *parser) peekKind(i int) (tokKind, error) {
	t, err := p.peek(i)
	return t.kind, err
}

func (p *parser) take() token {
	t := p.buf[0]
	p.buf = p.buf[1:]
	return t
}

func (p *parser) expect(k tokKind, what string) (token, error) {
	t, err := p.peek(0)
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, fmt.Errorf("%w: expected %s, found %v", ErrSyntax, what, t)
	}
	return p.take(), nil
}

func semantic(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)
}

// asBoolean is asBooleanExpression: a property becomes a boolean cast.
func asBoolean(x node) (node, error) {
	if isBoolean(x) {
		return x, nil
	}
	if _, ok := x.(*propNode); ok {
		return &castNode{x}, nil
	}
	return nil, semantic("expression will not result in a boolean value: %v", x)
}

func (p *parser) selector() (node, error) {
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	return asBoolean(x)
}

func (p *parser) or() (node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, semantic("expression nested deeper than %d", maxDepth)
	}
	defer func() { p.depth-- }()
	return p.logic(tOr, p.and)
}

func (p *parser) and() (node, error) { return p.logic(tAnd, p.equality) }

func (p *parser) logic(op tokKind, operand func() (node, error)) (node, error) {
	left, err := operand()
	for err == nil {
		var k tokKind
		if k, err = p.peekKind(0); err != nil || k != op {
			break
		}
		p.take()
		var right node
		if right, err = operand(); err != nil {
			break
		}
		var l, r node
		if l, err = asBoolean(left); err != nil {
			break
		}
		if r, err = asBoolean(right); err != nil {
			break
		}
		left = &logicNode{and: op == tAnd, l: l, r: r}
	}
	return left, err
}

func (p *parser) equality() (node, error) {
	left, err := p.comparison()
	for err == nil {
		var k, k2 tokKind
		if k, err = p.peekKind(0); err != nil {
			break
		}
		switch k {
		case tEq, tNe:
			p.take()
			var right node
			if right, err = p.comparison(); err == nil {
				left, err = createEqual(left, right)
				if err == nil && k == tNe {
					left = &notNode{left}
				}
			}
		case tIs:
			if k2, err = p.peekKind(1); err != nil {
				break
			}
			p.take()
			if k2 == tNot {
				p.take()
			}
			if _, err = p.expect(tNull, "NULL"); err == nil {
				left = &eqNode{l: left, r: &constNode{v: null, boolConst: true}}
				if k2 == tNot {
					left = &notNode{left}
				}
			}
		default:
			return left, nil
		}
	}
	return left, err
}

func createEqual(l, r node) (node, error) {
	for _, x := range []node{l, r} {
		if c, ok := x.(*constNode); ok && c.v.k == kNull {
			return nil, semantic("'%v' cannot be compared", x)
		}
	}
	lc, lok := l.(*constNode)
	_, rok := r.(*constNode)
	if lok && rok && lc.boolConst && !isBoolean(r) {
		return nil, semantic("'%v' cannot be compared with '%v'", l, r)
	}
	return &eqNode{l: l, r: r}, nil
}

// checkLessThanOperand: constants must be numbers, and boolean
// expressions cannot be ordered.
func checkLessThanOperand(x node) error {
	if c, ok := x.(*constNode); ok {
		if c.v.isNumber() {
			return nil
		}
		return semantic("value '%v' cannot be compared", x)
	}
	if isBoolean(x) {
		return semantic("value '%v' cannot be compared", x)
	}
	return nil
}

func createCmp(op cmpOp, l, r node) (node, error) {
	if err := checkLessThanOperand(l); err != nil {
		return nil, err
	}
	if err := checkLessThanOperand(r); err != nil {
		return nil, err
	}
	return &cmpNode{op: op, l: l, r: r}, nil
}

var cmpTokens = map[tokKind]cmpOp{tGt: opGt, tGe: opGe, tLt: opLt, tLe: opLe}

func (p *parser) comparison() (node, error) {
	left, err := p.unary()
	for err == nil {
		var k, k2 tokKind
		if k, err = p.peekKind(0); err != nil {
			break
		}
		if op, ok := cmpTokens[k]; ok {
			p.take()
			var right node
			if right, err = p.unary(); err == nil {
				left, err = createCmp(op, left, right)
			}
			continue
		}
		not := false
		if k == tNot {
			if k2, err = p.peekKind(1); err != nil {
				break
			}
			if k2 != tBetween && k2 != tIn {
				return left, nil
			}
			p.take()
			k, not = k2, true
		}
		switch k {
		case tBetween:
			p.take()
			left, err = p.between(left, not)
		case tIn:
			p.take()
			left, err = p.in(left, not)
		default:
			return left, nil
		}
	}
	return left, err
}

func (p *parser) between(value node, not bool) (node, error) {
	low, err := p.unary()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tAnd, "AND"); err != nil {
		return nil, err
	}
	high, err := p.unary()
	if err != nil {
		return nil, err
	}
	if not {
		l, err := createCmp(opLt, value, low)
		if err != nil {
			return nil, err
		}
		h, err := createCmp(opGt, value, high)
		if err != nil {
			return nil, err
		}
		return &logicNode{and: false, l: l, r: h}, nil
	}
	lc, lok := low.(*constNode)
	hc, hok := high.(*constNode)
	if lok && hok {
		if lc.v.k == kNull || hc.v.k == kNull {
			return nil, semantic("illegal values of between, values can not be null")
		}
		c, err := compare(hc.v, lc.v)
		if err != nil {
			return nil, semantic("illegal values of between: %v", err)
		}
		if c < 0 {
			return nil, semantic("illegal values of between, left value(%v) must less than or equal to right value(%v)", lc, hc)
		}
	}
	l, err := createCmp(opGe, value, low)
	if err != nil {
		return nil, err
	}
	h, err := createCmp(opLe, value, high)
	if err != nil {
		return nil, err
	}
	return &logicNode{and: true, l: l, r: h}, nil
}

func (p *parser) in(left node, not bool) (node, error) {
	if _, err := p.expect(tLParen, "("); err != nil {
		return nil, err
	}
	var list []string
	for {
		t, err := p.expect(tString, "a string")
		if err != nil {
			return nil, err
		}
		list = append(list, unquote(t.text))
		k, err := p.peekKind(0)
		if err != nil {
			return nil, err
		}
		if k != tComma {
			break
		}
		p.take()
	}
	if _, err := p.expect(tRParen, ")"); err != nil {
		return nil, err
	}
	prop, ok := left.(*propNode)
	if !ok {
		return nil, semantic("expected a property for In expression, got: %v", left)
	}
	set := make(map[string]struct{}, len(list))
	for _, s := range list {
		set[s] = struct{}{}
	}
	return &inNode{prop: prop, set: set, list: list, not: not}, nil
}

func (p *parser) unary() (node, error) {
	k, err := p.peekKind(0)
	if err != nil {
		return nil, err
	}
	switch k {
	case tPlus, tMinus, tNot:
		if p.depth++; p.depth > maxDepth {
			return nil, semantic("expression nested deeper than %d", maxDepth)
		}
		defer func() { p.depth-- }()
		p.take()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		switch k {
		case tMinus:
			return &negNode{x}, nil
		case tNot:
			b, err := asBoolean(x)
			if err != nil {
				return nil, err
			}
			return &notNode{b}, nil
		}
		return x, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t, err := p.peek(0)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tString:
		p.take()
		return &constNode{v: value{k: kString, s: unquote(t.text)}}, nil
	case tDecimal:
		p.take()
		return decimal(t.text)
	case tFloat:
		p.take()
		return float(t.text)
	case tTrue, tFalse, tNull:
		p.take()
		v := map[tokKind]value{tTrue: vTrue, tFalse: vFalse, tNull: null}[t.kind]
		return &constNode{v: v, boolConst: true}, nil
	case tID:
		p.take()
		return &propNode{name: t.text}, nil
	case tLParen:
		p.take()
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, ")"); err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, fmt.Errorf("%w: unexpected %v", ErrSyntax, t)
}

// unquote decodes a string literal, where a doubled quote stands for one.
func unquote(text string) string {
	return strings.ReplaceAll(text[1:len(text)-1], "''", "'")
}

// decimal is ConstantExpression.createFromDecimal: a Long, narrowed to
// Integer when it fits.
func decimal(text string) (node, error) {
	n, err := strconv.ParseInt(strings.TrimRight(text, "lL"), 10, 64)
	if err != nil {
		return nil, semantic("%s: %v", text, errors.Unwrap(err))
	}
	k := kLong
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		k = kInt
	}
	return &constNode{v: value{k: k, i: n}}, nil
}

// float is ConstantExpression.createFloat, which refuses values above
// Double.MAX_VALUE and below Double.MIN_VALUE (the smallest positive
// double, so 0.0 too).
func float(text string) (node, error) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, semantic("%s: %v", text, err)
	}
	if f > math.MaxFloat64 {
		return nil, semantic("%s is greater than %v", text, math.MaxFloat64)
	}
	if f < math.SmallestNonzeroFloat64 {
		return nil, semantic("%s is less than %v", text, math.SmallestNonzeroFloat64)
	}
	return &constNode{v: value{k: kDouble, f: f}}, nil
}
