package server

import (
	"github.com/rocketstore/rocketstore/broker/config"
)

// The admin bodies, decoded as fastjson does (see lenient.go).

// parseSubscriptionGroup decodes a SubscriptionGroupConfig body
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP); absent fields keep RocketMQ's
// defaults.
func parseSubscriptionGroup(body []byte) (config.SubscriptionGroupConfig, error) {
	d, o, err := decodeObject("SubscriptionGroupConfig body", body)
	if err != nil {
		return config.SubscriptionGroupConfig{}, err
	}
	g := config.NewSubscriptionGroupConfig(o.str("groupName"))
	g.ConsumeEnable = o.boolean("consumeEnable", g.ConsumeEnable)
	g.ConsumeFromMinEnable = o.boolean("consumeFromMinEnable", g.ConsumeFromMinEnable)
	g.ConsumeBroadcastEnable = o.boolean("consumeBroadcastEnable", g.ConsumeBroadcastEnable)
	g.ConsumeMessageOrderly = o.boolean("consumeMessageOrderly", g.ConsumeMessageOrderly)
	g.RetryQueueNums = int(o.int("retryQueueNums", 32, int64(g.RetryQueueNums)))
	g.RetryMaxTimes = int(o.int("retryMaxTimes", 32, int64(g.RetryMaxTimes)))
	g.BrokerID = o.int("brokerId", 64, g.BrokerID)
	g.WhichBrokerWhenConsumeSlowly = o.int("whichBrokerWhenConsumeSlowly", 64, g.WhichBrokerWhenConsumeSlowly)
	g.NotifyConsumerIdsChangedEnable = o.boolean("notifyConsumerIdsChangedEnable", g.NotifyConsumerIdsChangedEnable)
	return g, d.err
}

// parseDataVersionBody decodes a DataVersion body (QUERY_DATA_VERSION).
func parseDataVersionBody(body []byte) (config.DataVersion, error) {
	d, o, err := decodeObject("DataVersion body", body)
	if err != nil {
		return config.DataVersion{}, err
	}
	return parseDataVersion(o), d.err
}
