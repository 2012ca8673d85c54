package broker

import (
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/record"
)

// Defaults of the trace, request-reply and transaction settings
// (BrokerConfig).
const (
	DefaultBrokerClusterName        = "DefaultCluster"
	DefaultRegionID                 = "DefaultRegion"
	DefaultMsgTraceTopicName        = record.TraceTopic
	DefaultTransactionTimeOut       = 6 * time.Second
	DefaultTransactionCheckMax      = 15
	DefaultTransactionCheckInterval = 60 * time.Second
)

// ReplyTopicSuffix follows the cluster name in the reply topic
// (MixAll.REPLY_TOPIC_POSTFIX).
const ReplyTopicSuffix = "_REPLY_TOPIC"

// TransactionConfig holds the transactional-message settings.
type TransactionConfig struct {
	// TimeOut is transactionTimeOut (6 s): a half message younger than
	// this (or than its CHECK_IMMUNITY_TIME_IN_SECONDS property) is not
	// checked back yet.
	TimeOut time.Duration
	// CheckMax is transactionCheckMax (15): a half message checked this
	// many times is discarded.
	CheckMax int
	// CheckInterval is transactionCheckInterval (60 s): how often the
	// check-back service runs.
	CheckInterval time.Duration
	// Reject is rejectTransactionMessage (false): refuse half messages.
	Reject bool
}

func (c Config) withFeatureDefaults() Config {
	if c.BrokerClusterName == "" {
		c.BrokerClusterName = DefaultBrokerClusterName
	}
	if c.RegionID == "" {
		c.RegionID = DefaultRegionID
	}
	if c.MsgTraceTopicName == "" {
		c.MsgTraceTopicName = DefaultMsgTraceTopicName
	}
	t := &c.Transaction
	if t.TimeOut == 0 {
		t.TimeOut = DefaultTransactionTimeOut
	}
	if t.CheckMax == 0 {
		t.CheckMax = DefaultTransactionCheckMax
	}
	if t.CheckInterval == 0 {
		t.CheckInterval = DefaultTransactionCheckInterval
	}
	return c
}

func (c Config) validateFeatures() error {
	t := c.Transaction
	if t.TimeOut < 0 || t.CheckInterval < 0 || t.CheckMax < 0 {
		return fmt.Errorf("%w: negative transaction setting", ErrConfig)
	}
	return nil
}

// TraceSwitch returns what send responses carry: MSG_REGION (regionId)
// and TRACE_ON (traceOn).
func (b *Broker) TraceSwitch() (region string, on bool) {
	return b.cfg.RegionID, !b.cfg.TraceOff
}

// ReplyTopic returns {BrokerClusterName}_REPLY_TOPIC.
func (b *Broker) ReplyTopic() string { return b.cfg.BrokerClusterName + ReplyTopicSuffix }

// Config returns the broker's configuration with defaults applied.
func (b *Broker) Config() Config { return b.cfg }

// systemTopics are the one-queue topics TopicConfigManager creates at
// start besides SELF_TEST_TOPIC and OFFSET_MOVED_EVENT.
func (b *Broker) systemTopics() []string {
	ts := []string{b.ReplyTopic()}
	if b.cfg.TraceTopicEnable {
		ts = append(ts, b.cfg.MsgTraceTopicName)
	}
	return ts
}
