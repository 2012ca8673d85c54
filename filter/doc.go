// Package filter decides which ConsumeQueue units a pull returns: it parses a
// consumer's tag subscription expression the way RocketMQ 4.x's
// FilterAPI.buildSubscriptionData does, and matches messages the way the
// broker's ExpressionMessageFilter does for the TAG expression type.
//
// getMessage checks a filter twice, in this order (spec §6, "Filters, in
// order"):
//
//  1. IsMatchedByConsumeQueue on the unit's tagsCode, before the CommitLog is
//     read. For tags this compares Java String.hashCode values only.
//  2. IsMatchedByCommitLog on the record's decoded properties, after it is
//     read. RocketMQ returns true here for tags, so two tags with the same
//     hash code (e.g. "Aa" and "BB") are indistinguishable.
//
// A TagFilter built with NewTagFilter keeps RocketMQ's hash-only semantics.
// NewSubscriptionFilter in mode MatchExact additionally compares the record's
// TAGS property with the subscribed tags in step 2, removing hash collisions
// at the cost of decoding properties.
//
// SQL92 and class filters are not implemented.
//
// Concurrency: a TagFilter is immutable once built and safe for concurrent
// use. BuildSubscriptionData returns a fresh value owned by the caller;
// the filter constructors copy what they keep from it.
package filter
