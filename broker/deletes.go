package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/broker/config"
)

// Deleter is implemented by a Writer that orders deletions through its
// log (a replicated broker group, package cluster): the broker hands it
// DELETE_TOPIC_IN_BROKER and DELETE_SUBSCRIPTIONGROUP instead of deleting
// locally, so that every replica deletes at the same place in the log and
// a deleted topic or group does not come back on another replica. The
// Deleter then calls DeleteTopicLocal and DeleteSubscriptionGroupLocal
// on every replica.
type Deleter interface {
	// DeleteTopic deletes a topic's config and queues on every replica.
	DeleteTopic(ctx context.Context, topic string) error
	// DeleteSubscriptionGroup deletes a group, and with removeOffset its
	// consumer offsets, on every replica.
	DeleteSubscriptionGroup(ctx context.Context, group string, removeOffset bool) error
}

// DeleteTopic deletes a topic (DELETE_TOPIC_IN_BROKER): through the
// Writer when it is a Deleter, else DeleteTopicLocal. Deleting a missing
// topic succeeds, as in RocketMQ.
func (b *Broker) DeleteTopic(ctx context.Context, topic string) error {
	if d, ok := b.cfg.Writer.(Deleter); ok {
		return d.DeleteTopic(ctx, topic)
	}
	return b.DeleteTopicLocal(topic)
}

// DeleteTopicLocal removes the topic from this broker's topic table and
// its ConsumeQueues from the store (RocketMQ's deleteTopicConfig and
// cleanUnusedTopic); the CommitLog bytes go with retention.
func (b *Broker) DeleteTopicLocal(topic string) error {
	if err := b.topics.Delete(topic); err != nil && !errors.Is(err, config.ErrNoTopic) {
		return fmt.Errorf("broker: delete topic %s from the topic table: %w", topic, err)
	}
	b.stats.Forget(topic)
	return b.store.DeleteTopic(topic)
}

// DeleteSubscriptionGroupLocal deletes a subscription group from this
// broker's table and, with removeOffset, its consumer offsets.
func (b *Broker) DeleteSubscriptionGroupLocal(group string, removeOffset bool) error {
	if err := b.groups.Delete(group); err != nil && !errors.Is(err, config.ErrNoGroup) {
		return fmt.Errorf("broker: delete subscription group %s: %w", group, err)
	}
	if removeOffset {
		b.offsets.RemoveGroup(group)
	}
	return nil
}
