package config

import (
	"maps"

	"github.com/rocketstore/rocketstore/record"
)

// RetryTopic returns the retry topic of a consumer group.
func RetryTopic(group string) string { return record.RetryGroupTopicPrefix + group }

// DLQTopic returns the dead-letter topic of a consumer group.
func DLQTopic(group string) string { return record.DLQGroupTopicPrefix + group }

// TopicConfig is one topic's configuration (RocketMQ's TopicConfig; the
// JSON names are RocketMQ's).
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int    `json:"readQueueNums"`
	WriteQueueNums  int    `json:"writeQueueNums"`
	Perm            int    `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int    `json:"topicSysFlag"`
	Order           bool   `json:"order"`
	// Attributes are RocketMQ 5.x's topic attributes (message.type,
	// queue.type, cleanup.policy, reserve.time), without their +/- sign.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// NewTopicConfig returns RocketMQ's defaults for a topic: 16 read and
// write queues, perm read+write, SINGLE_TAG.
func NewTopicConfig(name string) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: 16, WriteQueueNums: 16,
		Perm: record.PermRead | record.PermWrite, TopicFilterType: "SINGLE_TAG"}
}

// Equal reports whether two topic configurations are the same,
// attributes included.
func (tc TopicConfig) Equal(o TopicConfig) bool {
	return tc.TopicName == o.TopicName && tc.ReadQueueNums == o.ReadQueueNums &&
		tc.WriteQueueNums == o.WriteQueueNums && tc.Perm == o.Perm && tc.TopicFilterType == o.TopicFilterType &&
		tc.TopicSysFlag == o.TopicSysFlag && tc.Order == o.Order && maps.Equal(tc.Attributes, o.Attributes)
}
