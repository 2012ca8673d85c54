package broker

import (
	"sync"

	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/filter/sql92"
)

// pullFilter is what a pull filters with: a TagFilter or a compiled SQL92
// expression. Both satisfy record.MessageFilter and longpoll.Matcher.
type pullFilter interface {
	IsMatchedByConsumeQueue(tagsCode int64) bool
	IsMatchedByCommitLog(props map[string]string) bool
}

// isSQLType reports whether an expression type is not a tag expression
// (ExpressionType.isTagType is false).
func isSQLType(typ string) bool { return typ != "" && typ != filter.ExpressionTypeTag }

// registerFilters records the SQL92 subscriptions of a heartbeat
// (DefaultConsumerIdsChangeListener's REGISTER event). An expression that
// does not compile is logged and not registered: the consumer's pulls are
// then answered FILTER_DATA_NOT_EXIST, RocketMQ's code for it.
func (b *Broker) registerFilters(d ConsumerData) {
	for _, sd := range d.Subscriptions {
		if !isSQLType(sd.ExpressionType) {
			continue
		}
		if err := b.filters.register(d.GroupName, sd); err != nil {
			b.logger.Warn("consumer filter does not compile", "group", d.GroupName, "topic", sd.Topic,
				"type", sd.ExpressionType, "expression", sd.SubString, "err", err)
		}
	}
}

// sqlFilter finds the compiled expression of a SQL92 pull, with
// PullMessageProcessor's codes: from the request (subscription flag) it is
// compiled here, through a cache, and a malformed one is
// SUBSCRIPTION_PARSE_FAILED; from the group's heartbeat it is the
// registered filter data: FILTER_DATA_NOT_EXIST when there is none (it did
// not compile), FILTER_DATA_NOT_LATEST when older than the pull's
// subVersion. Then, as in 4.9, SYSTEM_ERROR when enablePropertyFilter is
// off.
func (b *Broker) sqlFilter(req *PullRequest, sd *filter.SubscriptionData) (pullFilter, ResponseCode, string) {
	var expr *sql92.Expression
	if req.SysFlag.Has(FlagSubscription) {
		if b.cfg.EnablePropertyFilter {
			var err error
			if expr, err = b.sqlCache.compile(sd.ExpressionType, sd.SubString); err != nil {
				return nil, SubscriptionParseFailed, "parse the consumer's subscription failed: " + err.Error()
			}
		}
	} else {
		fd := b.filters.get(req.Topic, req.ConsumerGroup)
		if fd == nil {
			return nil, FilterDataNotExist, "The broker's consumer filter data is not exist!Your expression may be wrong!"
		}
		if fd.ClientVersion < req.SubVersion {
			return nil, FilterDataNotLatest, "the consumer's consumer filter data not latest"
		}
		expr = fd.compiled
	}
	if !b.cfg.EnablePropertyFilter {
		return nil, SystemError, "The broker does not support consumer to filter message by " + sd.ExpressionType
	}
	if expr == nil { // persisted data that no longer compiles
		return nil, FilterDataNotExist, "The broker's consumer filter data is not exist!Your expression may be wrong!"
	}
	return expr, Success, ""
}

// CheckClientConfig answers CHECK_CLIENT_CONFIG (46) for a subscription:
// tag expressions pass; other types need enablePropertyFilter
// (SYSTEM_ERROR) and must compile (SUBSCRIPTION_PARSE_FAILED with the
// reason).
func (b *Broker) CheckClientConfig(expressionType, expression string) (ResponseCode, string) {
	if !isSQLType(expressionType) {
		return Success, ""
	}
	if !b.cfg.EnablePropertyFilter {
		return SystemError, "The broker does not support consumer to filter message by " + expressionType
	}
	if _, err := b.sqlCache.compile(expressionType, expression); err != nil {
		return SubscriptionParseFailed, err.Error()
	}
	return Success, ""
}

// sqlCacheSize bounds the compiled expressions kept for pulls that carry
// their subscription (SelectorParser's PARSE_CACHE holds 100).
const sqlCacheSize = 100

// sqlCache keeps compiled expressions (and failures) by type and text.
type sqlCache struct {
	mu sync.Mutex
	m  map[[2]string]sqlCacheEntry
}

type sqlCacheEntry struct {
	expr *sql92.Expression
	err  error
}

func (c *sqlCache) compile(typ, text string) (*sql92.Expression, error) {
	k := [2]string{typ, text}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return e.expr, e.err
	}
	e.expr, e.err = compileFilter(typ, text)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= sqlCacheSize {
		c.m = make(map[[2]string]sqlCacheEntry, sqlCacheSize)
	}
	c.m[k] = e
	c.mu.Unlock()
	return e.expr, e.err
}
