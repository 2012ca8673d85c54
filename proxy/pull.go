package proxy

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// maxPullBatch bounds a pull's batch, as the 4.x broker bounds a pull.
const maxPullBatch = 32

// pullQueue checks the group and queue of a pull-consumer request.
func (p *Proxy) pullQueue(ctx context.Context, group string, mq *rmqpb.MessageQueue) *rmqpb.Status {
	topic := mq.GetTopic().GetName()
	if st := validTopic(topic); st != nil {
		return st
	}
	if group != "" {
		if st := validGroup(group); st != nil {
			return st
		}
		if st := p.authorize(ctx, topicNeed(topic, acl.PermSub), groupNeed(group)); st != nil {
			return st
		}
	} else if st := p.authorize(ctx, topicNeed(topic, acl.PermSub)); st != nil {
		return st
	}
	tc, ok := p.topicConfig(topic)
	if !ok {
		return status(rmqpb.Code_TOPIC_NOT_FOUND, "topic "+topic+" does not exist")
	}
	if mq.GetId() < 0 || int(mq.GetId()) >= tc.ReadQueueNums {
		return status(rmqpb.Code_BAD_REQUEST, "queue id out of range of the topic's read queues")
	}
	return nil
}

// PullMessage is the 5.x pull consumer's read of one queue from an
// offset: the status, then the messages, then the next offset. An empty
// queue is held up to the request's long polling timeout.
func (p *Proxy) PullMessage(req *rmqpb.PullMessageRequest, stream grpc.ServerStreamingServer[rmqpb.PullMessageResponse]) error {
	ctx := stream.Context()
	mq, group := req.GetMessageQueue(), req.GetGroup().GetName()
	if st := p.pullQueue(ctx, group, mq); st != nil {
		return stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Status{Status: st}})
	}
	fe := req.GetFilterExpression()
	exprType, expr := filter.ExpressionTypeTag, fe.GetExpression()
	if fe.GetType() == rmqpb.FilterType_SQL {
		exprType = filter.ExpressionTypeSQL92
	}
	if expr == "" {
		expr = filter.SubAll
	}
	batch := req.GetBatchSize()
	if batch <= 0 || batch > maxPullBatch {
		batch = maxPullBatch
	}
	wait := req.GetLongPollingTimeout().AsDuration()
	pr := &broker.PullRequest{ConsumerGroup: group, Topic: mq.GetTopic().GetName(), QueueID: mq.GetId(),
		QueueOffset: req.GetOffset(), MaxMsgNums: batch, SysFlag: broker.FlagSubscription,
		Subscription: expr, ExpressionType: exprType, SubVersion: time.Now().UnixMilli(),
		ClientHost: remoteOf(ctx).String()}
	if wait > 0 {
		pr.SysFlag |= broker.FlagSuspend
		pr.SuspendTimeoutMillis = wait.Milliseconds()
	}
	res, err := p.b.Pull(ctx, pr)
	if err != nil {
		return stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Status{
			Status: status(rmqpb.Code_INTERNAL_SERVER_ERROR, err.Error())}})
	}
	var st *rmqpb.Status
	switch res.Code {
	case broker.Success:
		st = okStatus
	case broker.PullNotFound, broker.PullRetryImmediately:
		st = status(rmqpb.Code_MESSAGE_NOT_FOUND, "no new message")
	case broker.PullOffsetMoved:
		st = status(rmqpb.Code_ILLEGAL_OFFSET, res.Remark)
	case broker.SubscriptionParseFailed:
		st = status(rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, res.Remark)
	default:
		st = brokerStatus(res.Code, res.Remark)
	}
	if err := stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Status{Status: st}}); err != nil {
		return err
	}
	for pos := 0; pos < len(res.Body); {
		m, err := record.Decode(res.Body[pos:], 0, false)
		if err != nil {
			p.log.Error("pull: undecodable record", "topic", pr.Topic, "queue", pr.QueueID, "err", err)
			break
		}
		pos += int(m.StoreSize)
		pm := toMessage(m, pr.Topic)
		pm.SystemProperties.QueueOffset = &m.QueueOffset
		if err := stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_Message{Message: pm}}); err != nil {
			return err
		}
	}
	return stream.Send(&rmqpb.PullMessageResponse{Content: &rmqpb.PullMessageResponse_NextOffset{NextOffset: res.NextBeginOffset}})
}

// UpdateOffset commits a pull consumer's offset (the broker's consumer
// offsets: a 4.x consumer of the group sees it).
func (p *Proxy) UpdateOffset(ctx context.Context, req *rmqpb.UpdateOffsetRequest) (*rmqpb.UpdateOffsetResponse, error) {
	mq, group := req.GetMessageQueue(), req.GetGroup().GetName()
	if group == "" {
		return &rmqpb.UpdateOffsetResponse{Status: validGroup(group)}, nil
	}
	if st := p.pullQueue(ctx, group, mq); st != nil {
		return &rmqpb.UpdateOffsetResponse{Status: st}, nil
	}
	code, remark := p.b.UpdateConsumerOffset(remoteOf(ctx).String(), group, mq.GetTopic().GetName(), mq.GetId(), req.GetOffset())
	if code != broker.Success {
		return &rmqpb.UpdateOffsetResponse{Status: brokerStatus(code, remark)}, nil
	}
	return &rmqpb.UpdateOffsetResponse{Status: okStatus}, nil
}

// GetOffset returns a group's committed offset of a queue;
// OFFSET_NOT_FOUND when it has none.
func (p *Proxy) GetOffset(ctx context.Context, req *rmqpb.GetOffsetRequest) (*rmqpb.GetOffsetResponse, error) {
	mq, group := req.GetMessageQueue(), req.GetGroup().GetName()
	if group == "" {
		return &rmqpb.GetOffsetResponse{Status: validGroup(group)}, nil
	}
	if st := p.pullQueue(ctx, group, mq); st != nil {
		return &rmqpb.GetOffsetResponse{Status: st}, nil
	}
	code, off := p.b.QueryConsumerOffset(group, mq.GetTopic().GetName(), mq.GetId())
	if code != broker.Success {
		return &rmqpb.GetOffsetResponse{Status: status(rmqpb.Code_OFFSET_NOT_FOUND, "the group has no offset for the queue")}, nil
	}
	return &rmqpb.GetOffsetResponse{Status: okStatus, Offset: off}, nil
}

// QueryOffset answers a queue's first or last offset, or the offset of a
// store time.
func (p *Proxy) QueryOffset(ctx context.Context, req *rmqpb.QueryOffsetRequest) (*rmqpb.QueryOffsetResponse, error) {
	mq := req.GetMessageQueue()
	if st := p.pullQueue(ctx, "", mq); st != nil {
		return &rmqpb.QueryOffsetResponse{Status: st}, nil
	}
	topic, qid := mq.GetTopic().GetName(), mq.GetId()
	var off int64
	switch req.GetQueryOffsetPolicy() {
	case rmqpb.QueryOffsetPolicy_BEGINNING:
		off = p.b.Store().MinOffsetInQueue(topic, qid)
	case rmqpb.QueryOffsetPolicy_END:
		off = p.b.Store().MaxOffsetInQueue(topic, qid)
	case rmqpb.QueryOffsetPolicy_TIMESTAMP:
		if req.GetTimestamp() == nil {
			return &rmqpb.QueryOffsetResponse{Status: status(rmqpb.Code_BAD_REQUEST, "a TIMESTAMP query needs a timestamp")}, nil
		}
		off = p.b.SearchOffsetByTimestamp(topic, qid, req.GetTimestamp().AsTime().UnixMilli())
	default:
		return &rmqpb.QueryOffsetResponse{Status: status(rmqpb.Code_BAD_REQUEST, "unknown query offset policy")}, nil
	}
	return &rmqpb.QueryOffsetResponse{Status: okStatus, Offset: off}, nil
}
