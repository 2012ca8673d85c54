package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/record"
)

// IllegalOperation is ResponseCode.ILLEGAL_OPERATION: a recall that
// cannot be done.
const IllegalOperation ResponseCode = 604

func init() { codeNames[IllegalOperation] = "ILLEGAL_OPERATION" }

// RecallResult is the answer to a recall: the code and, on success, the
// id of the recalled message.
type RecallResult struct {
	Code   ResponseCode
	Remark string
	MsgID  string
}

// Recall cancels a pending timer message, named by the handle its send
// answered (RocketMQ 5.x's RecallMessageProcessor, RECALL_MESSAGE 370):
// it stores a recall message (TIMER_DEL_UNIQKEY) in the message's slot,
// which drops the message when the slot is delivered. A message already
// due is delivered: the recall fails with ILLEGAL_OPERATION. A recall
// that races the delivery of its slot may answer SUCCESS while the
// message is delivered, as in RocketMQ.
func (b *Broker) Recall(ctx context.Context, producerGroup, topic, handle string) RecallResult {
	if b.closed.Load() || !b.writer().Writable() {
		return RecallResult{Code: ServiceNotAvailable, Remark: "recall failed, broker service not available"}
	}
	if _, ok := b.topics.Get(topic); !ok {
		return RecallResult{Code: TopicNotExist, Remark: "recall failed, the topic[" + topic + "] not exist"}
	}
	h, err := timer.ParseRecallHandle(handle)
	switch {
	case err != nil:
		return RecallResult{Code: IllegalOperation, Remark: "recall failed: " + err.Error()}
	case h.Topic != topic:
		return RecallResult{Code: IllegalOperation, Remark: fmt.Sprintf("recall failed, topic not match: the handle names %s", h.Topic)}
	case h.BrokerName != b.cfg.BrokerName:
		return RecallResult{Code: IllegalOperation, Remark: fmt.Sprintf("recall failed: the handle is of broker %s, this is %s", h.BrokerName, b.cfg.BrokerName)}
	}
	now := b.now()
	if h.DeliverMs <= now || h.DeliverMs < b.timer.ReadTime() {
		return RecallResult{Code: IllegalOperation, Remark: fmt.Sprintf("recall failed: message %s was due at %d (now %d) and is delivered already",
			h.MessageID, h.DeliverMs, now)}
	}
	if h.DeliverMs-now > b.timer.Config().MaxDelay.Milliseconds() {
		return RecallResult{Code: IllegalOperation, Remark: "recall failed, timestamp invalid: further than timerMaxDelaySec"}
	}
	m := &record.Message{Topic: topic, Body: []byte("0"), BornTimestamp: now, Properties: map[string]string{
		record.PropertyTags:            record.RecallTag,
		record.PropertyTimerDelUniqKey: record.TimerDeleteKey(topic, h.MessageID),
		record.PropertyUniqClientMsgID: h.MessageID,
		record.PropertyTimerDeliverMS:  strconv.FormatInt(h.DeliverMs, 10),
		transaction.PropProducerGroup:  producerGroup,
	}}
	res := b.putTimed(ctx, m, 0)
	if res.Code != Success && res.Code != FlushDiskTimeout {
		return RecallResult{Code: SystemError, Remark: "recall failed, execute error: " + res.Remark}
	}
	return RecallResult{Code: Success, MsgID: h.MessageID}
}
