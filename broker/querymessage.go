package broker

import (
	"errors"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// ErrIndexDisabled reports a query on a broker without the index.
var ErrIndexDisabled = errors.New("broker: message index disabled")

// QueryMessageResult is the answer of QUERY_MESSAGE.
type QueryMessageResult struct {
	Messages                 []*record.MessageExt
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64
}

// QueryMessage answers QUERY_MESSAGE (12): up to maxNum (≤ 64) messages of
// topic whose KEYS or UNIQ_KEY is key, stored in [begin, end] ms, newest
// first. Like RocketMQ it matches by key hash and does not re-check the
// key; messages no longer in the CommitLog are skipped.
func (b *Broker) QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryMessageResult, error) {
	if b.index == nil {
		return nil, ErrIndexDisabled
	}
	r, err := b.index.QueryOffset(topic, key, maxNum, begin, end)
	if err != nil {
		return nil, err
	}
	out := &QueryMessageResult{IndexLastUpdateTimestamp: r.IndexLastUpdateTimestamp,
		IndexLastUpdatePhyOffset: r.IndexLastUpdatePhyOffset}
	for _, off := range r.PhyOffsets {
		m, err := b.store.LookMessageByOffset(off)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
	}
	return out, nil
}
