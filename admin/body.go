package admin

import (
	"encoding/json"
	"fmt"
)

// The bodies below carry RocketMQ 4.9's class and field names (package
// org.apache.rocketmq.common.admin and common.protocol.body); the JSON
// names are the Java field names.

// MessageQueue identifies one queue of a topic on a broker.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// MQMap is a Java Map<MessageQueue, V>: fastjson writes its keys as
// objects. Marshal writes that form; UnmarshalJSON reads it once
// Normalize has turned the keys into strings.
type MQMap[V any] map[MessageQueue]V

// UnmarshalJSON reads a map whose keys are MessageQueue objects held in
// strings (see Normalize).
func (m *MQMap[V]) UnmarshalJSON(b []byte) error {
	var raw map[string]V
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(MQMap[V], len(raw))
	for k, v := range raw {
		var mq MessageQueue
		if err := json.Unmarshal([]byte(k), &mq); err != nil {
			return fmt.Errorf("admin: message queue key %q: %w", k, err)
		}
		out[mq] = v
	}
	*m = out
	return nil
}

// TopicOffset is one queue's offsets in a TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable answers GET_TOPIC_STATS_INFO (202).
type TopicStatsTable struct {
	OffsetTable MQMap[TopicOffset] `json:"offsetTable"`
}

// OffsetWrapper is one queue's broker and consumer offsets.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// ConsumeStats answers GET_CONSUME_STATS (208).
type ConsumeStats struct {
	OffsetTable MQMap[OffsetWrapper] `json:"offsetTable"`
	ConsumeTps  float64              `json:"consumeTps"`
}

// Diff is the total lag: broker offset minus consumer offset, summed.
func (c *ConsumeStats) Diff() int64 {
	var d int64
	for _, w := range c.OffsetTable {
		d += w.BrokerOffset - w.ConsumerOffset
	}
	return d
}

// ConsumeStatsList answers GET_BROKER_CONSUME_STATS (317).
type ConsumeStatsList struct {
	ConsumeStatsList []map[string][]ConsumeStats `json:"consumeStatsList"`
	BrokerAddr       string                      `json:"brokerAddr"`
	TotalDiff        int64                       `json:"totalDiff"`
}

// Connection is one client's connection.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// SubscriptionData is a consumer's subscription to one topic.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []int32  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// ConsumerConnection answers GET_CONSUMER_CONNECTION_LIST (203).
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType,omitempty"`
	MessageModel      string                      `json:"messageModel,omitempty"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere,omitempty"`
}

// ProducerConnection answers GET_PRODUCER_CONNECTION_LIST (204).
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// KVTable answers GET_BROKER_RUNTIME_INFO (28) and GET_KVLIST_BY_NAMESPACE (219).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// GroupList answers QUERY_TOPIC_CONSUME_BY_WHO (300).
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// TopicList answers the topic list codes (206, 224, 304, 305).
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// QueueTimeSpan is one queue's time span for a group.
type QueueTimeSpan struct {
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	DelayTime        int64        `json:"delayTime"`
}

// QueryConsumeTimeSpanBody answers QUERY_CONSUME_TIME_SPAN (303).
type QueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet []QueueTimeSpan `json:"consumeTimeSpanSet"`
}

// BrokerStatsItem is one window of a statistic.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// BrokerStatsData answers VIEW_BROKER_STATS_DATA (315).
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// ConsumeQueueData is one ConsumeQueue unit.
type ConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// QueryConsumeQueueResponseBody answers QUERY_CONSUME_QUEUE (321).
type QueryConsumeQueueResponseBody struct {
	SubscriptionData *SubscriptionData  `json:"subscriptionData,omitempty"`
	FilterData       string             `json:"filterData,omitempty"`
	QueueData        []ConsumeQueueData `json:"queueData"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
}

// QueryCorrectionOffsetBody answers QUERY_CORRECTION_OFFSET (308).
type QueryCorrectionOffsetBody struct {
	CorrectionOffsets map[int32]int64 `json:"correctionOffsets"`
}

// ResetOffsetBody is RESET_CONSUMER_CLIENT_OFFSET's body (220) and the
// answer of INVOKE_BROKER_TO_RESET_OFFSET (222).
type ResetOffsetBody struct {
	OffsetTable MQMap[int64] `json:"offsetTable"`
}

// GetConsumerStatusBody is a client's answer to
// GET_CONSUMER_STATUS_FROM_CLIENT (221) (messageQueueTable) and the
// broker's to INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) (consumerTable).
type GetConsumerStatusBody struct {
	MessageQueueTable MQMap[int64]            `json:"messageQueueTable"`
	ConsumerTable     map[string]MQMap[int64] `json:"consumerTable"`
}

// TimerMetrics is the body of GET_TIMER_METRICS (61), RocketMQ 5.x's
// TimerMetricsSerializeWrapper: the pending timer messages of each real
// topic.
type TimerMetrics struct {
	TimingCount map[string]TimerMetric `json:"timingCount"`
	DataVersion DataVersion            `json:"dataVersion"`
}

// TimerMetric is one topic's pending timer messages and the time (ms) of
// the count.
type TimerMetric struct {
	Count     int64 `json:"count"`
	TimeStamp int64 `json:"timeStamp"`
}

// DataVersion orders versions of a config table.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// TopicConfig is one topic's configuration.
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int    `json:"readQueueNums"`
	WriteQueueNums  int    `json:"writeQueueNums"`
	Perm            int    `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int    `json:"topicSysFlag"`
	Order           bool   `json:"order"`
	// Attributes are the 5.x topic attributes (message.type ...).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// TopicConfigSerializeWrapper answers GET_ALL_TOPIC_CONFIG (21).
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// SubscriptionGroupConfig is one consumer group's configuration.
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool   `json:"consumeMessageOrderly,omitempty"`
	RetryQueueNums                 int    `json:"retryQueueNums"`
	RetryMaxTimes                  int    `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// SubscriptionGroupWrapper answers GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// ConsumerOffsetSerializeWrapper answers GET_ALL_CONSUMER_OFFSET (43):
// "topic@group" → queue id → offset.
type ConsumerOffsetSerializeWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// DelayOffsetSerializeWrapper answers GET_ALL_DELAY_OFFSET (45): delay
// level → offset in SCHEDULE_TOPIC_XXXX.
type DelayOffsetSerializeWrapper struct {
	OffsetTable map[int32]int64 `json:"offsetTable"`
}

// BrokerData is one broker set of a cluster.
type BrokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

// ClusterInfo answers GET_BROKER_CLUSTER_INFO (106).
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// QueueData is a topic's queues on one broker.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

// TopicRouteData answers GET_ROUTEINFO_BY_TOPIC (105).
type TopicRouteData struct {
	OrderTopicConf string       `json:"orderTopicConf,omitempty"`
	QueueDatas     []QueueData  `json:"queueDatas"`
	BrokerDatas    []BrokerData `json:"brokerDatas"`
}

// MasterAddrs returns the address of each broker's master (brokerId 0) by
// broker name; a broker without a master is left out.
func (rd *TopicRouteData) MasterAddrs() map[string]string {
	out := map[string]string{}
	for _, bd := range rd.BrokerDatas {
		if a, ok := bd.BrokerAddrs["0"]; ok {
			out[bd.BrokerName] = a
		}
	}
	return out
}

// ConsumeMessageDirectlyResult is a client's answer to CONSUME_MESSAGE_DIRECTLY (309).
type ConsumeMessageDirectlyResult struct {
	Order          bool     `json:"order"`
	AutoCommit     bool     `json:"autoCommit"`
	ConsumeResult  CMResult `json:"consumeResult"`
	Remark         string   `json:"remark"`
	SpentTimeMills int64    `json:"spentTimeMills"`
}

// CMResult is a direct consume's result: Java's CMResult name
// ("CR_SUCCESS", "CR_LATER", ...). The Go client sends its ConsumeResult
// number instead; UnmarshalJSON maps it to the Java name.
type CMResult string

// UnmarshalJSON reads a CMResult name or the Go client's number.
func (r *CMResult) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*r = CMResult(name)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("admin: consumeResult %s is neither a name nor a number", b)
	}
	names := []CMResult{"CR_SUCCESS", "CR_LATER", "CR_COMMIT", "CR_ROLLBACK", "CR_LATER"}
	if n < 0 || n >= len(names) {
		return fmt.Errorf("admin: consumeResult %d unknown", n)
	}
	*r = names[n]
	return nil
}
