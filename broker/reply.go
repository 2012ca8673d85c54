package broker

import (
	"context"
	"math/rand/v2"

	"github.com/rocketstore/rocketstore/record"
)

// CheckReply runs SEND_REPLY_MESSAGE's checks (msgCheck: permissions,
// topic, auto-creation, queue id) and picks the queue. On failure the
// result carries the code; on success its QueueID is the queue to use.
func (b *Broker) CheckReply(req *SendRequest) SendResult {
	if b.closed.Load() {
		return SendResult{Code: ServiceNotAvailable, Remark: "the broker is shutting down"}
	}
	tc, fail := b.sendCheck(req)
	if fail != nil {
		return *fail
	}
	qid := req.QueueID
	if qid < 0 {
		qid = int32(rand.IntN(99999999) % max(1, tc.WriteQueueNums))
	}
	return SendResult{Code: Success, QueueID: qid, Topic: req.Topic}
}

// StoreReply stores a reply message in its topic (the reply topic),
// as ReplyMessageProcessor does when storeReplyMessageEnable is on (the
// default), after the push to the requester.
func (b *Broker) StoreReply(ctx context.Context, req *SendRequest, qid int32) SendResult {
	props := record.ParseProperties([]byte(req.Properties))
	m := &record.Message{Topic: req.Topic, QueueID: qid, Flag: req.Flag, Body: req.Body, Properties: props,
		SysFlag: req.SysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, ReconsumeTimes: req.ReconsumeTimes}
	res, err := b.writer().Put(ctx, m)
	out := putResult(err)
	if out.Code == Success || out.Code == FlushDiskTimeout {
		out.MsgID, out.Topic, out.QueueID, out.QueueOffset, out.MsgNum = res.MsgID(), res.Topic, qid, res.QueueOffset, 1
		b.stats.Put(req.Topic, 1)
	}
	return out
}
