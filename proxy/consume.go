package proxy

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/pop"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/filter/sql92"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// Receive limits. RocketMQ's proxy asks at least 10 s of invisible time
// (minInvisibleTimeMillsForRecv); here 1 s is enough, which lets tests and
// short jobs use short times. An auto-renewed receive (PushConsumer) gets
// defaultInvisibleTimeMills, 60 s, and is not renewed by the server: a
// message consumed for longer is delivered again.
const (
	minReceiveInvisible = time.Second
	maxInvisible        = 12 * time.Hour
	autoRenewInvisible  = 60 * time.Second
	maxReceiveBatch     = 32
	minLongPolling      = 5 * time.Millisecond
)

// receiveTarget checks a consumer request's topic and group and returns
// the topic's configuration, or the status refusing it.
func (p *Proxy) receiveTarget(ctx context.Context, topic, group string) (config.TopicConfig, *rmqpb.Status) {
	if st := validTopic(topic); st != nil {
		return config.TopicConfig{}, st
	}
	if st := validGroup(group); st != nil {
		return config.TopicConfig{}, st
	}
	if st := p.authorize(ctx, topicNeed(topic, acl.PermSub), groupNeed(group)); st != nil {
		return config.TopicConfig{}, st
	}
	tc, ok := p.topicConfig(topic)
	if !ok {
		return tc, status(rmqpb.Code_TOPIC_NOT_FOUND, "topic "+topic+" does not exist")
	}
	return tc, nil
}

// messageFilter compiles a 5.x filter expression: TAG with exact tag
// matching (a pop has no client-side check after the hash), or SQL92.
func messageFilter(fe *rmqpb.FilterExpression) (record.MessageFilter, *rmqpb.Status) {
	expr := fe.GetExpression()
	if fe.GetType() == rmqpb.FilterType_SQL {
		e, err := sql92.Compile(expr)
		if err != nil {
			return nil, status(rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, err.Error())
		}
		return e, nil
	}
	if expr == "" || expr == filter.SubAll {
		return nil, nil
	}
	sd, err := filter.BuildSubscriptionData("", expr)
	if err != nil {
		return nil, status(rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, err.Error())
	}
	f, err := filter.NewSubscriptionFilter(sd, filter.MatchExact)
	if err != nil {
		return nil, status(rmqpb.Code_ILLEGAL_FILTER_EXPRESSION, err.Error())
	}
	return f, nil
}

// ReceiveMessage pops up to batch_size messages of the topic for the
// group (any queue, or the one named), each with its receipt handle and
// delivery attempt, and marks them invisible for the request's invisible
// duration. With nothing to deliver it waits up to the long polling
// timeout, woken as messages arrive or invisible times end.
// The answer is the status, the messages, then the delivery time; no
// message is MESSAGE_NOT_FOUND, as RocketMQ's proxy answers.
func (p *Proxy) ReceiveMessage(req *rmqpb.ReceiveMessageRequest, stream grpc.ServerStreamingServer[rmqpb.ReceiveMessageResponse]) error {
	ctx := stream.Context()
	sendStatus := func(st *rmqpb.Status) error {
		return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: st}})
	}
	topic, group := req.GetMessageQueue().GetTopic().GetName(), req.GetGroup().GetName()
	tc, st := p.receiveTarget(ctx, topic, group)
	if st != nil {
		return sendStatus(st)
	}
	if tc.Perm&record.PermRead == 0 {
		return sendStatus(status(rmqpb.Code_FORBIDDEN, "no readable queue"))
	}
	invisible := req.GetInvisibleDuration().AsDuration()
	if req.GetAutoRenew() {
		invisible = autoRenewInvisible
	} else if invisible < minReceiveInvisible || invisible > maxInvisible {
		return sendStatus(status(rmqpb.Code_ILLEGAL_INVISIBLE_TIME, "the invisible time must be from 1s to 12h, not "+invisible.String()))
	}
	f, st := messageFilter(req.GetFilterExpression())
	if st != nil {
		return sendStatus(st)
	}
	batch := int(req.GetBatchSize())
	if batch <= 0 || batch > maxReceiveBatch {
		batch = maxReceiveBatch
	}
	qid := req.GetMessageQueue().GetId()
	if qid < 0 || int(qid) >= tc.ReadQueueNums {
		qid = pop.AllQueues
	}
	pr := pop.ReceiveRequest{Group: group, Topic: topic, QueueID: qid, Filter: f, Max: batch,
		InvisibleTime: invisible, FIFO: topicFIFO(tc)}
	wait := min(max(req.GetLongPollingTimeout().AsDuration(), minLongPolling), consumerMaxLongPolling)
	msgs, err := p.receive(ctx, pr, wait)
	if err != nil {
		return sendStatus(popStatus(err))
	}
	if len(msgs) == 0 {
		return sendStatus(status(rmqpb.Code_MESSAGE_NOT_FOUND, "no new message"))
	}
	if err := sendStatus(okStatus); err != nil {
		return p.unsend(group, topic, msgs, err)
	}
	for i, m := range msgs {
		pm := toMessage(m.MessageExt, topic)
		sp := pm.SystemProperties
		sp.ReceiptHandle = proto.String(m.ReceiptHandle())
		sp.DeliveryAttempt = &m.Attempt
		sp.QueueOffset = &m.QueueOffset
		sp.InvisibleDuration = durationpb.New(invisible)
		if err := stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Message{Message: pm}}); err != nil {
			return p.unsend(group, topic, msgs[i:], err)
		}
	}
	return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_DeliveryTimestamp{
		DeliveryTimestamp: timestamppb.New(p.cfg.Clock.Now())}})
}

// receive pops, waiting up to wait for something to deliver: the pop
// service's long polling, woken by an arrival on the topic or by the end
// of an in-flight message's invisible time. A client that leaves or a
// proxy that stops ends the wait with nothing received.
func (p *Proxy) receive(ctx context.Context, pr pop.ReceiveRequest, wait time.Duration) ([]pop.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.clients.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	pr.PollTime = wait
	msgs, err := p.b.Pop().Receive(ctx, pr)
	if err != nil && ctx.Err() != nil {
		return nil, nil
	}
	// Pop receives count as got, as pulls do (msgGetTotalTodayNow).
	p.b.Stats().Got(pr.Topic, pr.Group, len(msgs))
	return msgs, err
}

// unsend makes messages whose delivery failed on the wire visible again
// at once (their attempt stays counted), so that the next receive gets
// them rather than waiting out their invisible time.
func (p *Proxy) unsend(group, topic string, msgs []pop.Message, cause error) error {
	for _, m := range msgs {
		if _, err := p.b.Pop().ChangeInvisibleDuration(context.Background(), group, topic, m.ReceiptHandle(), 0); err != nil {
			p.log.Warn("receive: undelivered message stays invisible", "group", group, "topic", topic,
				"queue", m.QueueID, "offset", m.QueueOffset, "err", err)
		}
	}
	return cause
}

// popStatus maps pop's errors to the codes RocketMQ's proxy answers.
func popStatus(err error) *rmqpb.Status {
	switch {
	case errors.Is(err, pop.ErrBadHandle), errors.Is(err, pop.ErrStaleHandle):
		return status(rmqpb.Code_INVALID_RECEIPT_HANDLE, err.Error())
	case errors.Is(err, pop.ErrBadRequest):
		return status(rmqpb.Code_BAD_REQUEST, err.Error())
	}
	return status(rmqpb.Code_INTERNAL_SERVER_ERROR, err.Error())
}

// AckMessage finishes the deliveries of its entries; each entry has its
// status (INVALID_RECEIPT_HANDLE for one whose delivery is over: acked,
// delivered again, or in the DLQ).
func (p *Proxy) AckMessage(ctx context.Context, req *rmqpb.AckMessageRequest) (*rmqpb.AckMessageResponse, error) {
	topic, group := req.GetTopic().GetName(), req.GetGroup().GetName()
	if _, st := p.receiveTarget(ctx, topic, group); st != nil {
		return &rmqpb.AckMessageResponse{Status: st}, nil
	}
	handles := make([]string, len(req.GetEntries()))
	for i, e := range req.GetEntries() {
		handles[i] = e.GetReceiptHandle()
	}
	errs := p.b.Pop().AckBatch(ctx, group, topic, handles)
	resp := &rmqpb.AckMessageResponse{}
	codes := map[rmqpb.Code]bool{}
	for i, e := range req.GetEntries() {
		st := okStatus
		if errs[i] != nil {
			st = popStatus(errs[i])
		}
		codes[st.GetCode()] = true
		resp.Entries = append(resp.Entries, &rmqpb.AckMessageResultEntry{MessageId: e.GetMessageId(),
			ReceiptHandle: e.GetReceiptHandle(), Status: st})
	}
	switch {
	case len(codes) > 1:
		resp.Status = status(rmqpb.Code_MULTIPLE_RESULTS, "")
	case len(resp.Entries) > 0:
		resp.Status = resp.Entries[0].GetStatus()
	default:
		resp.Status = status(rmqpb.Code_BAD_REQUEST, "no entry to ack")
	}
	return resp, nil
}

// ChangeInvisibleDuration makes a received message invisible for the
// given time from now (0: visible at once, which is how a client asks
// for a redelivery) and answers the new receipt handle.
func (p *Proxy) ChangeInvisibleDuration(ctx context.Context, req *rmqpb.ChangeInvisibleDurationRequest) (*rmqpb.ChangeInvisibleDurationResponse, error) {
	topic, group := req.GetTopic().GetName(), req.GetGroup().GetName()
	if _, st := p.receiveTarget(ctx, topic, group); st != nil {
		return &rmqpb.ChangeInvisibleDurationResponse{Status: st}, nil
	}
	d := req.GetInvisibleDuration().AsDuration()
	if d < 0 || d > maxInvisible {
		return &rmqpb.ChangeInvisibleDurationResponse{Status: status(rmqpb.Code_ILLEGAL_INVISIBLE_TIME,
			"the invisible time must be from 0 to 12h, not "+d.String())}, nil
	}
	h, err := p.b.Pop().ChangeInvisibleDuration(ctx, group, topic, req.GetReceiptHandle(), d)
	if err != nil {
		return &rmqpb.ChangeInvisibleDurationResponse{Status: popStatus(err)}, nil
	}
	return &rmqpb.ChangeInvisibleDurationResponse{Status: okStatus, ReceiptHandle: h.String()}, nil
}

// ForwardMessageToDeadLetterQueue stores a received message in the
// group's DLQ (%DLQ%group) and finishes its delivery, as a client does
// when its consumption failed max_delivery_attempts times.
func (p *Proxy) ForwardMessageToDeadLetterQueue(ctx context.Context, req *rmqpb.ForwardMessageToDeadLetterQueueRequest) (*rmqpb.ForwardMessageToDeadLetterQueueResponse, error) {
	topic, group := req.GetTopic().GetName(), req.GetGroup().GetName()
	if _, st := p.receiveTarget(ctx, topic, group); st != nil {
		return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	h, err := pop.ParseHandle(req.GetReceiptHandle())
	if err != nil {
		return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: popStatus(err)}, nil
	}
	res, err := p.b.Store().GetMessage(topic, h.QueueID, h.Offset, 1, nil)
	if err != nil || len(res.Messages) == 0 {
		if res != nil {
			res.Release()
		}
		return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: status(rmqpb.Code_INVALID_RECEIPT_HANDLE,
			"the message of the receipt handle is no longer stored")}, nil
	}
	clo := res.Messages[0].CommitLogOffset
	res.Release()
	r := p.b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: clo, Group: group, DelayLevel: -1,
		OriginMsgID: req.GetMessageId(), OriginTopic: topic})
	if r.Code != broker.Success {
		return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: brokerStatus(r.Code, r.Remark)}, nil
	}
	if err := p.b.Pop().Ack(ctx, group, topic, req.GetReceiptHandle()); err != nil {
		// Stored in the DLQ; the delivery ended some other way meanwhile.
		p.log.Warn("forward to DLQ: ack after the DLQ copy", "group", group, "topic", topic, "err", err)
	}
	return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: okStatus}, nil
}

// groupFIFO reports whether any topic the group's consumers subscribe is
// FIFO: the fifo flag of the settings the server issues.
func (p *Proxy) groupFIFO(topics ...string) bool {
	for _, t := range topics {
		if tc, ok := p.topicConfig(t); ok && topicFIFO(tc) {
			return true
		}
	}
	return false
}
