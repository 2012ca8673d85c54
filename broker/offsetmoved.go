package broker

import (
	"context"
	"encoding/json"

	"github.com/rocketstore/rocketstore/record"
)

// OffsetMovedEvent is the body of the message a master publishes to
// OFFSET_MOVED_EVENT when it answers a pull with PULL_OFFSET_MOVED
// (RocketMQ's OffsetMovedEvent, encoded by fastjson: fields in
// alphabetical order, which these tags keep).
type OffsetMovedEvent struct {
	ConsumerGroup string       `json:"consumerGroup"`
	MessageQueue  MessageQueue `json:"messageQueue"`
	OffsetNew     int64        `json:"offsetNew"`
	OffsetRequest int64        `json:"offsetRequest"`
}

// MessageQueue is RocketMQ's MessageQueue.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// publishOffsetMoved stores an OffsetMovedEvent as
// PullMessageProcessor.generateOffsetMovedEvent does: topic
// OFFSET_MOVED_EVENT, queue 0, TAGS and KEYS = the consumer group, sysflag
// 0. rocketstore is always a master, so this runs on every code 21. A
// failure is logged only: the pull's answer does not depend on it.
func (b *Broker) publishOffsetMoved(req *PullRequest, offsetNew int64) {
	ev := OffsetMovedEvent{ConsumerGroup: req.ConsumerGroup, OffsetRequest: req.QueueOffset, OffsetNew: offsetNew,
		MessageQueue: MessageQueue{BrokerName: b.cfg.BrokerName, QueueID: req.QueueID, Topic: req.Topic}}
	body, err := json.Marshal(ev)
	if err == nil {
		m := &record.Message{Topic: record.OffsetMovedEventTopic, QueueID: 0, Body: body,
			Properties:    map[string]string{record.PropertyTags: req.ConsumerGroup, record.PropertyKeys: req.ConsumerGroup},
			BornTimestamp: b.now(), BornHost: b.store.Config().StoreHost}
		_, err = b.writer().Put(context.Background(), m)
	}
	if err != nil {
		b.logger.Warn("publish OffsetMovedEvent", "group", req.ConsumerGroup, "topic", req.Topic,
			"queueId", req.QueueID, "err", err)
	}
}
