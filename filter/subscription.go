package filter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/record"
)

// SubAll is the subscription expression that matches every message
// (RocketMQ's SubscriptionData.SUB_ALL).
const SubAll = "*"

// Expression types, as RocketMQ's ExpressionType spells them.
const (
	// ExpressionTypeTag selects tag subscriptions: "A || B" or "*".
	ExpressionTypeTag = "TAG"
	// ExpressionTypeSQL92 selects SQL92 property filters. This package
	// does not evaluate them.
	ExpressionTypeSQL92 = "SQL92"
)

// tagSeparator separates tags in a subscription expression.
const tagSeparator = "||"

var (
	// ErrBadExpression reports a subscription expression that names no
	// tag, such as "||" or "  ".
	ErrBadExpression = errors.New("filter: bad subscription expression")
	// ErrUnsupportedType reports a SubscriptionData whose ExpressionType
	// is not TAG (e.g. SQL92).
	ErrUnsupportedType = errors.New("filter: unsupported expression type")
)

// SubscriptionData mirrors RocketMQ's SubscriptionData for one consumer
// group's subscription to one topic.
type SubscriptionData struct {
	// Topic is the subscribed topic.
	Topic string
	// SubString is the expression: SubAll, or tags separated by "||".
	SubString string
	// TagsSet holds the distinct trimmed tags of SubString in first-seen
	// order; it is empty when SubString is SubAll.
	TagsSet []string
	// CodeSet holds the distinct Java hash codes of TagsSet in first-seen
	// order. It can be shorter than TagsSet when tags collide.
	CodeSet []int32
	// SubVersion orders versions of a subscription; RocketMQ sets it to
	// the creation time in milliseconds since the epoch.
	SubVersion int64
	// ExpressionType is ExpressionTypeTag for data built here.
	ExpressionType string
}

// BuildSubscriptionData parses a tag subscription expression for topic as
// RocketMQ's FilterAPI.buildSubscriptionData does:
//
//   - "" and "*" subscribe to everything; SubString becomes SubAll.
//   - Otherwise subString is split on "||"; each token is trimmed of
//     leading and trailing characters <= ' ' (Java's String.trim) and, if
//     not empty, its tag goes to TagsSet and its Java hash code to CodeSet.
//
// The match-all check is exact, as in RocketMQ: " * " is the tag "*" (hash
// code 42), not SubAll. Tokens keep inner spaces and single '|' characters
// ("A B", "A|B") because RocketMQ does and such tags are legal on the
// producer side; empty tokens ("A||", "A|| ||B") are skipped.
//
// RocketMQ throws only when the split yields no token at all ("||",
// "||||"); it accepts "  " or " || " and builds a subscription with no tag
// that silently matches nothing. This function is stricter: any expression
// that yields no tag returns an error wrapping ErrBadExpression.
func BuildSubscriptionData(topic, subString string) (*SubscriptionData, error) {
	sd := &SubscriptionData{
		Topic:          topic,
		SubString:      subString,
		SubVersion:     time.Now().UnixMilli(),
		ExpressionType: ExpressionTypeTag,
	}
	if subString == "" || subString == SubAll {
		sd.SubString = SubAll
		return sd, nil
	}
	for tok := range strings.SplitSeq(subString, tagSeparator) {
		tag := javaTrim(tok)
		if tag == "" {
			continue
		}
		sd.addTag(tag)
	}
	if len(sd.TagsSet) == 0 {
		return nil, fmt.Errorf("%w: %q names no tag", ErrBadExpression, subString)
	}
	return sd, nil
}

// addTag adds tag and its hash code unless already present. Java keeps
// them in HashSets; slices keep the order stable and are short in practice.
func (sd *SubscriptionData) addTag(tag string) {
	if !slices.Contains(sd.TagsSet, tag) {
		sd.TagsSet = append(sd.TagsSet, tag)
	}
	if code := record.JavaStringHashCode(tag); !slices.Contains(sd.CodeSet, code) {
		sd.CodeSet = append(sd.CodeSet, code)
	}
}

// javaTrim trims like Java's String.trim: every character <= U+0020 at
// either end, which includes ASCII control characters but no other Unicode
// space.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
