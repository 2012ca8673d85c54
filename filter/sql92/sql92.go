package sql92

// Expression is a compiled SQL92 selector. It is immutable and safe for
// concurrent use.
type Expression struct {
	src  string
	root node
}

// Compile parses and checks a selector. The error wraps ErrSyntax and
// says what is wrong and where.
func Compile(expr string) (*Expression, error) {
	p := &parser{lex: lexer{src: expr}}
	root, err := p.selector()
	if err != nil {
		return nil, err
	}
	return &Expression{src: expr, root: root}, nil
}

// String returns the source text.
func (e *Expression) String() string { return e.src }

// Result is the three-valued outcome of an evaluation.
type Result uint8

// Results. Only True matches.
const (
	Unknown Result = iota // NULL, or an evaluation error
	False
	True
)

// String returns the result's SQL name.
func (r Result) String() string {
	return [...]string{"NULL", "FALSE", "TRUE"}[r]
}

// Evaluate evaluates the selector against message properties. An error
// (a property that does not convert to the number it is compared with,
// for example) comes back with Unknown; RocketMQ logs it and does not
// deliver the message.
func (e *Expression) Evaluate(props map[string]string) (Result, error) {
	v, err := e.root.eval(props)
	switch {
	case err != nil:
		return Unknown, err
	case v.k != kBool:
		return Unknown, nil
	case v.b:
		return True, nil
	}
	return False, nil
}

// Match reports whether a message with these properties is delivered:
// the selector evaluates to TRUE.
func (e *Expression) Match(props map[string]string) bool {
	v, err := e.root.eval(props)
	return err == nil && v.k == kBool && v.b
}

// IsMatchedByConsumeQueue accepts every unit: a SQL92 selector needs the
// message's properties (RocketMQ's bloom-filter bit maps in ConsumeQueueExt
// are not kept).
func (e *Expression) IsMatchedByConsumeQueue(int64) bool { return true }

// IsMatchedByCommitLog is Match, for getMessage.
func (e *Expression) IsMatchedByCommitLog(props map[string]string) bool { return e.Match(props) }

// NeedsProperties tells getMessage to decode each record's properties.
func (e *Expression) NeedsProperties() bool { return true }
