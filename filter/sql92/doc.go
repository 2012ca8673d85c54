// Package sql92 compiles and evaluates RocketMQ's SQL92 message selectors
// (the expression of a consumer subscribed with ExpressionType SQL92),
// with the grammar and semantics of RocketMQ 4.9's filter module
// (SelectorParser.jj, ComparisonExpression, LogicExpression,
// UnaryExpression):
//
//   - comparisons =, <>, >, >=, <, <=; [NOT] BETWEEN x AND y;
//     [NOT] IN ('a', 'b'); IS [NOT] NULL; AND, OR, NOT; unary + and -;
//   - literals: strings in single quotes (a doubled quote stands for one), integers
//     (Integer when they fit in 32 bits, else Long; an l/L suffix is
//     allowed), floating point (Double), TRUE, FALSE, NULL; keywords are
//     case-insensitive; -- and /* */ comments;
//   - property values are strings; a comparison with a number converts the
//     string to the number's type (Integer.valueOf, Long.valueOf,
//     Double.valueOf), and a string that does not convert makes the whole
//     evaluation fail, which does not match; >, >=, <, <= between two
//     strings compare them as doubles;
//   - three-valued logic: a missing property is NULL; a comparison with
//     NULL is NULL (unknown); NOT NULL is NULL; FALSE AND NULL is FALSE,
//     TRUE OR NULL is TRUE; a message matches only when the expression is
//     TRUE. One asymmetry is RocketMQ's: `constant = missing` is FALSE
//     (so `constant <> missing` is TRUE) while `missing = constant` is
//     NULL.
//
// Compile-time checks are RocketMQ's too: an expression that is not
// boolean, a string or boolean operand of <, a NULL operand of =, BETWEEN
// bounds that are NULL or reversed, IN on something other than a
// property, a float literal of 0 or out of range, all fail to compile. As
// in RocketMQ, the parser stops at the first token that cannot continue
// the expression: trailing tokens are ignored ("a > 1 b" compiles as
// "a > 1").
package sql92
