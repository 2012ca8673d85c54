package broker

import (
	"context"
	"maps"
	"math/rand/v2"
	"strconv"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
)

// SendMsgBackRequest is ConsumerSendMsgBackRequestHeader.
type SendMsgBackRequest struct {
	// Offset is the CommitLog offset of the message that failed.
	Offset int64
	Group  string
	// DelayLevel: 0 means 3 + reconsumeTimes; negative sends the message
	// straight to the DLQ.
	DelayLevel int
	// OriginMsgID and OriginTopic are informational (hooks only).
	OriginMsgID string
	OriginTopic string
	UnitMode    bool
	// MaxReconsumeTimes overrides the group's retryMaxTimes (clients from
	// V3_4_9 send it; nil: not sent).
	MaxReconsumeTimes *int32
}

// Response is a response with only a code and a remark.
type Response struct {
	Code   ResponseCode
	Remark string
}

// dlqQueueNums is DLQ_NUMS_PER_GROUP.
const dlqQueueNums = 1

// SendMsgBack answers CONSUMER_SEND_MSG_BACK (36), spec §9: the message is
// stored again for the group's retry topic with a delay level (the store
// redirects it to SCHEDULE_TOPIC_XXXX), or in the group's DLQ once it has
// been reconsumed retryMaxTimes times or the level is negative.
func (b *Broker) SendMsgBack(ctx context.Context, req *SendMsgBackRequest) Response {
	g, ok, err := b.groups.Find(req.Group)
	switch {
	case err != nil:
		return Response{SystemError, err.Error()}
	case !ok:
		return Response{SubscriptionGroupNotExist, "subscription group not exist, " + req.Group}
	case !config.IsWritable(b.cfg.BrokerPermission):
		return Response{NoPermission, "the broker sending message is forbidden"}
	case g.RetryQueueNums <= 0:
		return Response{Success, ""} // RocketMQ drops the message
	}
	topic, qid := config.RetryTopic(req.Group), int32(rand.IntN(99999999)%g.RetryQueueNums)
	sysFlag := 0
	if req.UnitMode {
		sysFlag = topicSysFlagUnitSub
	}
	tc, err := b.topics.CreateInSendMessageBack(topic, g.RetryQueueNums, record.PermRead|record.PermWrite, sysFlag)
	if err != nil {
		return Response{SystemError, err.Error()}
	}
	if !config.IsWritable(tc.Perm) {
		return Response{NoPermission, "the topic[" + topic + "] sending message is forbidden"}
	}
	ext, err := b.store.LookMessageByOffset(req.Offset)
	if err != nil {
		return Response{SystemError, "look message by offset failed, " + strconv.FormatInt(req.Offset, 10)}
	}
	return b.sendBack(ctx, req, g, ext, topic, qid)
}

// topicSysFlagUnitSub is TopicSysFlag.buildSysFlag(false, true).
const topicSysFlagUnitSub = 0x2

// sendBack builds and stores the retry or DLQ message (steps 5–11).
func (b *Broker) sendBack(ctx context.Context, req *SendMsgBackRequest, g config.SubscriptionGroupConfig,
	ext *record.MessageExt, topic string, qid int32) Response {
	props := maps.Clone(ext.Properties)
	if props == nil {
		props = make(map[string]string)
	}
	if props[record.PropertyRetryTopic] == "" {
		props[record.PropertyRetryTopic] = ext.Topic
	}
	props[record.PropertyWaitStoreMsgOK] = "false"
	maxTimes := int32(g.RetryMaxTimes)
	if req.MaxReconsumeTimes != nil {
		maxTimes = *req.MaxReconsumeTimes
	}
	delay := req.DelayLevel
	if ext.ReconsumeTimes >= maxTimes || delay < 0 {
		topic, qid, delay = config.DLQTopic(req.Group), int32(rand.IntN(99999999)%dlqQueueNums), 0
		tc, err := b.topics.CreateInSendMessageBack(topic, dlqQueueNums, record.PermRead|record.PermWrite, 0)
		if err != nil {
			return Response{SystemError, err.Error()}
		}
		if !config.IsWritable(tc.Perm) {
			return Response{NoPermission, "the topic[" + topic + "] sending message is forbidden"}
		}
		delete(props, record.PropertyDelayTimeLevel)
	} else {
		if delay == 0 {
			delay = 3 + int(ext.ReconsumeTimes)
		}
		props[record.PropertyDelayTimeLevel] = strconv.Itoa(delay)
	}
	if props[record.PropertyOriginMessageID] == "" {
		props[record.PropertyOriginMessageID] = ext.MsgID()
	}
	m := ext.Message
	m.Topic, m.QueueID, m.Properties = topic, qid, props
	m.ReconsumeTimes = ext.ReconsumeTimes + 1
	if _, err := b.writer().Put(ctx, &m); err != nil {
		return Response{SystemError, err.Error()}
	}
	return Response{Success, ""}
}
