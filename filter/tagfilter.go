package filter

import (
	"fmt"
	"slices"

	"github.com/rocketstore/rocketstore/record"
)

// tagsProperty is the message property that holds a message's tags.
const tagsProperty = "TAGS"

// smallSet is the largest code set scanned linearly; bigger sets use a map.
// A scan of a few int32s beats hashing, and subscriptions rarely name more
// than a handful of tags.
const smallSet = 8

var (
	_ record.MessageFilter = (*TagFilter)(nil)
	_ record.MessageFilter = matchAll{}
)

// All is a record.MessageFilter that matches every message, like a subscription
// to SubAll.
var All record.MessageFilter = matchAll{}

type matchAll struct{}

func (matchAll) IsMatchedByConsumeQueue(int64) bool          { return true }
func (matchAll) IsMatchedByCommitLog(map[string]string) bool { return true }

// Mode selects what TagFilter.IsMatchedByCommitLog checks once a unit's
// tagsCode has matched.
type Mode uint8

const (
	// MatchHash trusts the tagsCode, as RocketMQ does: a message whose tag
	// has the same Java hash code as a subscribed tag is delivered.
	MatchHash Mode = iota
	// MatchExact also requires the record's TAGS property to equal one of
	// the subscribed tags, so hash collisions are not delivered.
	MatchExact
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case MatchHash:
		return "hash"
	case MatchExact:
		return "exact"
	default:
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
}

// TagFilter matches messages against a TAG subscription. Build one with
// NewTagFilter, NewExactTagFilter or NewSubscriptionFilter. The zero
// TagFilter matches everything, like SubAll. A TagFilter is immutable and
// safe for concurrent use.
type TagFilter struct {
	// selective is false for SubAll; then every other field is unused.
	selective bool
	mode      Mode
	expr      string
	// Invariant when selective: exactly one of codes and codeMap is
	// non-empty; codes when there are at most smallSet codes.
	codes   []int32
	codeMap map[int32]struct{}
	// tags is set in MatchExact mode only.
	tags map[string]struct{}
}

// NewTagFilter parses expr with BuildSubscriptionData and returns a filter
// with RocketMQ's hash-only semantics (MatchHash).
func NewTagFilter(expr string) (*TagFilter, error) {
	return newFromExpr(expr, MatchHash)
}

func newFromExpr(expr string, mode Mode) (*TagFilter, error) {
	sd, err := BuildSubscriptionData("", expr)
	if err != nil {
		return nil, err
	}
	return NewSubscriptionFilter(sd, mode)
}

// NewSubscriptionFilter returns a filter for sd in the given mode. sd's
// ExpressionType must be ExpressionTypeTag or empty, else the error wraps
// ErrUnsupportedType. Unless sd.SubString is SubAll, sd must name at least
// one code (and, for MatchExact, one tag), else the error wraps
// ErrBadExpression. The filter copies what it needs; later changes to sd do
// not affect it.
func NewSubscriptionFilter(sd *SubscriptionData, mode Mode) (*TagFilter, error) {
	if sd == nil {
		return nil, fmt.Errorf("%w: nil subscription", ErrBadExpression)
	}
	if sd.ExpressionType != "" && sd.ExpressionType != ExpressionTypeTag {
		return nil, fmt.Errorf("%w: %q for topic %q", ErrUnsupportedType, sd.ExpressionType, sd.Topic)
	}
	if mode != MatchHash && mode != MatchExact {
		return nil, fmt.Errorf("filter: unknown mode %d", uint8(mode))
	}
	if sd.SubString == SubAll {
		return &TagFilter{mode: mode, expr: SubAll}, nil
	}
	if len(sd.CodeSet) == 0 || (mode == MatchExact && len(sd.TagsSet) == 0) {
		return nil, fmt.Errorf("%w: %q for topic %q names no tag", ErrBadExpression, sd.SubString, sd.Topic)
	}
	f := &TagFilter{selective: true, mode: mode, expr: sd.SubString}
	if len(sd.CodeSet) <= smallSet {
		f.codes = slices.Clone(sd.CodeSet)
	} else {
		f.codeMap = make(map[int32]struct{}, len(sd.CodeSet))
		for _, c := range sd.CodeSet {
			f.codeMap[c] = struct{}{}
		}
	}
	if mode == MatchExact {
		f.tags = make(map[string]struct{}, len(sd.TagsSet))
		for _, t := range sd.TagsSet {
			f.tags[t] = struct{}{}
		}
	}
	return f, nil
}

// IsMatchedByConsumeQueue reports whether a unit with this tagsCode may
// match: always for SubAll, else when int32(tagsCode) is a subscribed code.
// The truncation is Java's tagsCode.intValue(); tagsCodes are sign-extended
// int32 hash codes, so it loses nothing for them. (RocketMQ also matches a
// null tagsCode; ConsumeQueue units here always carry one.) It does not
// allocate.
func (f *TagFilter) IsMatchedByConsumeQueue(tagsCode int64) bool {
	if !f.selective {
		return true
	}
	code := int32(tagsCode)
	if f.codeMap != nil {
		_, ok := f.codeMap[code]
		return ok
	}
	return slices.Contains(f.codes, code)
}

// IsMatchedByCommitLog reports whether a record whose unit passed
// IsMatchedByConsumeQueue matches. In MatchHash mode, or for SubAll, it is
// always true (RocketMQ semantics). In MatchExact mode it requires
// props["TAGS"] to be a subscribed tag; a record without TAGS does not
// match. When props is nil the tags are unknown and it returns true, which
// falls back to hash-only matching: callers that want exact matching must
// pass the decoded properties.
func (f *TagFilter) IsMatchedByCommitLog(props map[string]string) bool {
	if !f.selective || f.mode != MatchExact || props == nil {
		return true
	}
	tags, ok := props[tagsProperty]
	if !ok {
		return false
	}
	_, ok = f.tags[tags]
	return ok
}

// MatchTag reports whether a message whose TAGS property is tags ("" for
// none) passes both checks of this filter, in its mode.
func (f *TagFilter) MatchTag(tags string) bool {
	if !f.IsMatchedByConsumeQueue(record.TagsCode(tags)) {
		return false
	}
	if !f.selective || f.mode != MatchExact {
		return true
	}
	_, ok := f.tags[tags]
	return ok
}

// MatchesAll reports whether the filter accepts every message (SubAll).
func (f *TagFilter) MatchesAll() bool { return !f.selective }

// Mode returns the filter's matching mode.
func (f *TagFilter) Mode() Mode { return f.mode }

// String returns the subscription expression and mode, for logs.
func (f *TagFilter) String() string {
	expr := f.expr
	if !f.selective {
		expr = SubAll
	}
	return fmt.Sprintf("tag(%q, %s)", expr, f.mode)
}

// NeedsProperties reports whether IsMatchedByCommitLog looks at the
// properties; the engine decodes them only for filters that do.
func (f *TagFilter) NeedsProperties() bool { return f != nil && f.selective && f.mode == MatchExact }
