package broker

import (
	"context"

	"github.com/rocketstore/rocketstore/broker/config"
)

// QueryConsumerOffset answers QUERY_CONSUMER_OFFSET (14): the committed
// offset; or, when none is committed, 0 if the queue still starts at
// offset 0 and that message is in memory (so a new group starts from the
// beginning of a young queue); else QueryNotFound.
func (b *Broker) QueryConsumerOffset(group, topic string, queueID int32) (ResponseCode, int64) {
	if off := b.offsets.Query(group, topic, queueID); off >= 0 {
		return Success, off
	}
	if b.store.MinOffsetInQueue(topic, queueID) <= 0 && !b.checkInDiskByConsumeOffset(topic, queueID, 0) {
		return Success, 0
	}
	return QueryNotFound, -1
}

// checkInDiskByConsumeOffset is RocketMQ's check of whether the message at
// a queue offset lies beyond the in-memory share of the CommitLog. A
// missing unit is not in disk.
func (b *Broker) checkInDiskByConsumeOffset(topic string, queueID int32, off int64) bool {
	phy, err := b.store.CommitLogOffsetInQueue(topic, queueID, off)
	if err != nil {
		return false
	}
	sc := b.store.Config()
	memory := sc.TotalPhysicalMemory * int64(sc.AccessMessageInMemoryMaxRatio) / 100
	return b.store.CommitLog().MaxOffset()-phy > memory
}

// UpdateConsumerOffset answers UPDATE_CONSUMER_OFFSET (15): an
// unconditional commit. Negative offsets are refused with SystemError (a
// RocketMQ broker stores them; no consumer sends one), an empty group or
// topic likewise, and a topic the broker does not have with
// TopicNotExist: none of them could ever be read back by a consumer, and
// persisted they would only clutter consumerOffset.json.
func (b *Broker) UpdateConsumerOffset(clientHost, group, topic string, queueID int32, off int64) (ResponseCode, string) {
	if off < 0 || queueID < 0 {
		return SystemError, "negative offset or queue id"
	}
	if group == "" || topic == "" {
		return SystemError, "consumer group and topic must not be empty"
	}
	if _, ok := b.topics.Get(topic); !ok {
		return TopicNotExist, "topic[" + topic + "] not exist, apply first please!"
	}
	b.offsets.Commit(clientHost, group, topic, queueID, off)
	return Success, ""
}

// DeleteSubscriptionGroup answers DELETE_SUBSCRIPTIONGROUP (207); with
// removeOffset it also drops the group's consumer offsets.
// Through a Writer that is a Deleter, the deletion is replicated.
func (b *Broker) DeleteSubscriptionGroup(group string, removeOffset bool) (ResponseCode, string) {
	var err error
	if d, ok := b.cfg.Writer.(Deleter); ok {
		err = d.DeleteSubscriptionGroup(context.Background(), group, removeOffset)
	} else {
		err = b.DeleteSubscriptionGroupLocal(group, removeOffset)
	}
	if err != nil {
		r := putResult(err)
		return r.Code, err.Error()
	}
	return Success, ""
}

// Heartbeat answers HEART_BEAT (34) for consumers: it registers each
// group's subscriptions and creates the group's retry topic (RocketMQ's
// ClientManageProcessor.heartBeat). Unknown groups get SubscriptionGroupNotExist
// when auto-creation is off.
func (b *Broker) Heartbeat(clientID string, consumers []ConsumerData) (ResponseCode, string) {
	for _, d := range consumers {
		g, ok, err := b.groups.Find(d.GroupName)
		if err != nil {
			return SystemError, err.Error()
		}
		if !ok {
			return SubscriptionGroupNotExist, "subscription group [" + d.GroupName + "] does not exist"
		}
		if g.RetryQueueNums > 0 {
			perm := config.PermRead | config.PermWrite
			if _, err := b.topics.CreateInSendMessageBack(config.RetryTopic(d.GroupName), g.RetryQueueNums, perm, 0); err != nil {
				return SystemError, err.Error()
			}
		}
		b.consumers.register(clientID, d)
		b.registerFilters(d)
	}
	return Success, ""
}

// Unregister answers UNREGISTER_CLIENT (35) for a consumer.
func (b *Broker) Unregister(clientID, group string) {
	b.consumers.unregister(clientID, group)
	if b.consumers.find(group) == nil {
		b.filters.unregister(group)
	}
}

// ConsumerGroup returns what the broker knows of an online group, or nil.
func (b *Broker) ConsumerGroup(group string) *ConsumerGroupInfo { return b.consumers.find(group) }
