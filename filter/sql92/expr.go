package sql92

import "fmt"

// node is a compiled expression (RocketMQ's Expression). eval returns
// errEval (wrapped) when Java would throw during evaluate.
type node interface {
	eval(props map[string]string) (value, error)
	String() string
}

// constNode is a literal (ConstantExpression). boolConst marks TRUE, FALSE
// and NULL, which RocketMQ builds as BooleanConstantExpression: both a
// constant and a boolean expression.
type constNode struct {
	v         value
	boolConst bool
}

func (c *constNode) eval(map[string]string) (value, error) { return c.v, nil }
func (c *constNode) String() string                        { return c.v.String() }

// propNode is a message property (PropertyExpression); a missing one is
// NULL.
type propNode struct{ name string }

func (p *propNode) eval(props map[string]string) (value, error) {
	if s, ok := props[p.name]; ok {
		return value{k: kString, s: s}, nil
	}
	return null, nil
}
func (p *propNode) String() string { return p.name }

// negNode is unary minus: NULL and non-numbers give NULL.
type negNode struct{ x node }

func (n *negNode) eval(props map[string]string) (value, error) {
	v, err := n.x.eval(props)
	if err != nil || !v.isNumber() {
		return null, err
	}
	if v.k == kDouble {
		v.f = -v.f
	} else if v.k == kInt {
		v.i = int64(-int32(v.i)) // Integer negation wraps at MIN_VALUE
	} else {
		v.i = -v.i
	}
	return v, nil
}
func (n *negNode) String() string { return "(- " + n.x.String() + ")" }

// notNode is NOT: NULL stays NULL.
type notNode struct{ x node }

func (n *notNode) eval(props map[string]string) (value, error) {
	v, err := n.x.eval(props)
	if err != nil || v.k == kNull {
		return null, err
	}
	if v.k != kBool {
		return null, fmt.Errorf("%w: NOT of %v", errEval, v)
	}
	return boolValue(!v.b), nil
}
func (n *notNode) String() string { return "(NOT " + n.x.String() + ")" }

// castNode is a property used as a condition (createBooleanCast): a
// missing property is NULL, any other value (properties are strings) is
// FALSE.
type castNode struct{ x node }

func (c *castNode) eval(props map[string]string) (value, error) {
	v, err := c.x.eval(props)
	if err != nil || v.k == kNull {
		return null, err
	}
	if v.k != kBool {
		return vFalse, nil
	}
	return v, nil
}
func (c *castNode) String() string { return c.x.String() }

// logicNode is AND / OR with SQL's three-valued logic and RocketMQ's
// short cut (the right side is not evaluated when the left decides).
type logicNode struct {
	and  bool
	l, r node
}

func (n *logicNode) eval(props map[string]string) (value, error) {
	lv, err := evalBool(n.l, props)
	if err != nil {
		return null, err
	}
	// The deciding value: FALSE for AND, TRUE for OR.
	decide := !n.and
	if lv.k == kBool && lv.b == decide {
		return lv, nil
	}
	rv, err := evalBool(n.r, props)
	if err != nil {
		return null, err
	}
	if rv.k == kBool && rv.b == decide {
		return rv, nil
	}
	if lv.k == kNull || rv.k == kNull {
		return null, nil
	}
	return boolValue(!decide), nil
}

func (n *logicNode) String() string {
	op := "OR"
	if n.and {
		op = "AND"
	}
	return "(" + n.l.String() + " " + op + " " + n.r.String() + ")"
}

// evalBool evaluates an operand of AND / OR / NOT, which Java casts to
// Boolean.
func evalBool(x node, props map[string]string) (value, error) {
	v, err := x.eval(props)
	if err == nil && v.k != kNull && v.k != kBool {
		err = fmt.Errorf("%w: %v is not boolean", errEval, v)
	}
	return v, err
}

// eqNode is = (and, with NULL on the right, IS NULL): doCreateEqual.
type eqNode struct{ l, r node }

func (n *eqNode) eval(props map[string]string) (value, error) {
	lv, err := n.l.eval(props)
	if err != nil {
		return null, err
	}
	rv, err := n.r.eval(props)
	if err != nil {
		return null, err
	}
	// RocketMQ's asymmetry: a NULL left side gives NULL, a NULL right
	// side gives FALSE; both NULL is TRUE (IS NULL).
	if (lv.k == kNull) != (rv.k == kNull) {
		if lv.k == kNull {
			return null, nil
		}
		return vFalse, nil
	}
	if lv.k == kNull || equals(lv, rv) {
		return vTrue, nil
	}
	c, err := compare(lv, rv)
	if err != nil {
		return null, err
	}
	return boolValue(c == 0), nil
}
func (n *eqNode) String() string {
	if c, ok := n.r.(*constNode); ok && c.v.k == kNull {
		return "(" + n.l.String() + " IS NULL)"
	}
	return "(" + n.l.String() + " = " + n.r.String() + ")"
}

// cmpOp is an ordering comparison.
type cmpOp uint8

const (
	opGt cmpOp = iota
	opGe
	opLt
	opLe
)

var cmpSymbols = [...]string{">", ">=", "<", "<="}

// cmpNode is >, >=, <, <=: NULL on either side gives NULL; two strings are
// compared as doubles.
type cmpNode struct {
	op   cmpOp
	l, r node
}

func (n *cmpNode) eval(props map[string]string) (value, error) {
	lv, err := n.l.eval(props)
	if err != nil || lv.k == kNull {
		return null, err
	}
	rv, err := n.r.eval(props)
	if err != nil || rv.k == kNull {
		return null, err
	}
	if lv.k == kString && rv.k == kString {
		if lv, err = parseDouble(lv.s); err != nil {
			return null, err
		}
		if rv, err = parseDouble(rv.s); err != nil {
			return null, err
		}
	}
	c, err := compare(lv, rv)
	if err != nil {
		return null, err
	}
	switch n.op {
	case opGt:
		return boolValue(c > 0), nil
	case opGe:
		return boolValue(c >= 0), nil
	case opLt:
		return boolValue(c < 0), nil
	}
	return boolValue(c <= 0), nil
}

func (n *cmpNode) String() string {
	return "(" + n.l.String() + " " + cmpSymbols[n.op] + " " + n.r.String() + ")"
}

// inNode is [NOT] IN on a property: NULL when the property is missing.
type inNode struct {
	prop *propNode
	set  map[string]struct{}
	list []string
	not  bool
}

func (n *inNode) eval(props map[string]string) (value, error) {
	s, ok := props[n.prop.name]
	if !ok {
		return null, nil
	}
	_, in := n.set[s]
	return boolValue(in != n.not), nil
}

func (n *inNode) String() string {
	op := " IN ("
	if n.not {
		op = " NOT IN ("
	}
	out := n.prop.name + op
	for i, s := range n.list {
		if i > 0 {
			out += ", "
		}
		out += value{k: kString, s: s}.String()
	}
	return out + ")"
}

// isBoolean reports whether x is a BooleanExpression in RocketMQ's class
// hierarchy.
func isBoolean(x node) bool {
	switch n := x.(type) {
	case *constNode:
		return n.boolConst
	case *notNode, *castNode, *logicNode, *eqNode, *cmpNode, *inNode:
		return true
	}
	return false
}
