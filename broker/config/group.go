package config

// SubscriptionGroupConfig is one consumer group's configuration
// (RocketMQ's SubscriptionGroupConfig; the JSON names are RocketMQ's).
type SubscriptionGroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeFromMinEnable   bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	// ConsumeMessageOrderly makes the group a FIFO group for 5.x pop
	// consumers: message groups of FIFO topics are delivered in order.
	ConsumeMessageOrderly          bool  `json:"consumeMessageOrderly,omitempty"`
	RetryQueueNums                 int   `json:"retryQueueNums"`
	RetryMaxTimes                  int   `json:"retryMaxTimes"`
	BrokerID                       int64 `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64 `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool  `json:"notifyConsumerIdsChangedEnable"`
}

// NewSubscriptionGroupConfig returns RocketMQ's defaults for a group:
// consume, consume-from-min and broadcast enabled, retryQueueNums 1,
// retryMaxTimes 16, brokerId 0 (master), whichBrokerWhenConsumeSlowly 1,
// notifyConsumerIdsChangedEnable.
func NewSubscriptionGroupConfig(name string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{GroupName: name, ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}
}

// System groups RocketMQ creates at start.
var systemGroups = []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
	"CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER"}
