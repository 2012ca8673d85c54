package broker

// SearchOffsetByTimestamp answers SEARCH_OFFSET_BY_TIMESTAMP (29): the
// smallest queue offset whose message was stored at or after ts (ms), by
// binary search over the queue's CommitLog offsets and the records' store
// timestamps, which are non-decreasing along a queue. It returns the max
// offset when every message is older than ts, and the min offset when the
// queue is empty or ts precedes everything. (RocketMQ 4.9.4 returns the
// neighbour closest in time; the lower bound is what "consume from
// timestamp" means and what 5.x's BoundaryType.LOWER returns.)
func (b *Broker) SearchOffsetByTimestamp(topic string, queueID int32, ts int64) int64 {
	s := b.store
	lo, hi := s.MinOffsetInQueue(topic, queueID), s.MaxOffsetInQueue(topic, queueID)
	// Invariant: every offset < lo is older than ts (or unreadable), and
	// every offset >= hi is at or after ts.
	for lo < hi {
		mid := lo + (hi-lo)/2
		at, ok := b.storeTimestampAt(topic, queueID, mid)
		if !ok || at < ts {
			// A unit whose record is gone (retention) counts as old.
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (b *Broker) storeTimestampAt(topic string, queueID int32, off int64) (int64, bool) {
	phy, err := b.store.CommitLogOffsetInQueue(topic, queueID, off)
	if err != nil {
		return 0, false
	}
	m, err := b.store.LookMessageByOffset(phy)
	if err != nil {
		return 0, false
	}
	return m.StoreTimestamp, true
}
