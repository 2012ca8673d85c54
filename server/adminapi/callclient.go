package adminapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// Request codes the broker sends to clients on their connections, and the
// admin codes that make it do so.
const (
	codeResetConsumerClientOffset       int32 = 220
	codeGetConsumerStatusFromClient     int32 = 221
	codeInvokeBrokerToResetOffset       int32 = 222
	codeInvokeBrokerToGetConsumerStatus int32 = 223
	codeConsumeMsgTimeout               int32 = 207 // ResponseCode.CONSUME_MSG_TIMEOUT
	clientCallTimeout                         = 5 * time.Second
)

// findConsumer returns the connection of a group's online client.
func (a *API) findConsumer(group, clientID string) (*remoting.Conn, bool) {
	for _, m := range a.host.Consumers(group) {
		if m.ClientID == clientID {
			return m.Conn, true
		}
	}
	return nil, false
}

// callConsumer forwards req to one client of group as a new request with
// the same header and body, and answers with the client's response
// (AdminBrokerProcessor.callConsumer).
func (a *API) callConsumer(ctx context.Context, code int32, req *remoting.RemotingCommand, group, clientID string) (*remoting.RemotingCommand, error) {
	conn, ok := a.findConsumer(group, clientID)
	if !ok {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID)), nil
	}
	out := remoting.NewRequest(code, req.Body)
	for k, v := range req.ExtFields {
		out.SetExt(k, v)
	}
	cctx, cancel := context.WithTimeout(ctx, clientCallTimeout)
	defer cancel()
	resp, err := conn.Invoke(cctx, out)
	if errors.Is(err, context.DeadlineExceeded) {
		return req.NewResponse(codeConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err)), nil
	}
	if err != nil {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err)), nil
	}
	answer := req.NewResponse(resp.Code, resp.Remark)
	answer.Body = resp.Body
	for k, v := range resp.ExtFields {
		answer.SetExt(k, v)
	}
	return answer, nil
}

// getConsumerRunningInfo answers GET_CONSUMER_RUNNING_INFO (307): header
// consumerGroup, clientId, jstackEnable; the client's ConsumerRunningInfo,
// asked over its own connection.
func (a *API) getConsumerRunningInfo(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group, clientID := f.String("consumerGroup"), f.String("clientId")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	return a.callConsumer(ctx, remoting.CodeGetConsumerRunningInfo, req, group, clientID)
}

// consumeMessageDirectly answers CONSUME_MESSAGE_DIRECTLY (309): header
// consumerGroup, clientId, msgId (an offset message id); the client
// consumes the message and answers a ConsumeMessageDirectlyResult.
func (a *API) consumeMessageDirectly(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group, clientID, msgID := f.String("consumerGroup"), f.String("clientId"), f.String("msgId")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	m, err := a.b.Store().LookMessageByMsgID(msgID)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return req.NewResponse(remoting.CodeSystemError, "no message with id "+msgID), nil
		}
		return badRequest(req, fmt.Errorf("msgId %q: %w", msgID, err))
	}
	fwd := req.Clone()
	fwd.SetExt("brokerName", a.cfg.BrokerName)
	if fwd.Body, err = record.AppendMessageExt(nil, m); err != nil {
		return nil, err
	}
	return a.callConsumer(ctx, remoting.CodeConsumeMessageDirectly, fwd, group, clientID)
}

// ResetOffsetPlan computes the offsets a group's queues of topic move to
// for a reset to timestamp (ms; -1 means the max offsets): a queue moves
// only back in time unless force (Broker2Client.resetOffset). It fails
// when the topic does not exist or the group has no offset for a queue.
func (a *API) ResetOffsetPlan(topic, group string, timestamp int64, force bool) (admin.MQMap[int64], error) {
	tc, ok := a.b.Topics().Get(topic)
	if !ok {
		return nil, fmt.Errorf("[reset-offset] reset offset failed, no topic in this broker. topic=%s", topic)
	}
	st := a.b.Store()
	// RocketMQ refuses a group without an offset for every queue; a
	// group that never consumed some queue is common (an idle queue), so
	// only a group without any offset for the topic is refused, and a
	// queue without one moves to the target.
	if len(a.b.Offsets().QueryAll(group, topic)) == 0 {
		return nil, fmt.Errorf("THe consumer group <%s> not exist (it has no offset for topic %s)", group, topic)
	}
	table := admin.MQMap[int64]{}
	for i := range int32(tc.WriteQueueNums) {
		cur := a.b.Offsets().Query(group, topic, i)
		if cur == -1 {
			cur = 1<<63 - 1
		}
		var to int64
		if timestamp == -1 {
			to = st.MaxOffsetInQueue(topic, i)
		} else {
			to = a.b.SearchOffsetByTimestamp(topic, i, timestamp)
		}
		to = max(to, 0)
		if !force && to >= cur {
			to = cur
		}
		table[admin.MessageQueue{Topic: topic, BrokerName: a.cfg.BrokerName, QueueID: i}] = to
	}
	return table, nil
}

// invokeBrokerToResetOffset answers INVOKE_BROKER_TO_RESET_OFFSET (222):
// header topic, group, timestamp, isForce. It sends
// RESET_CONSUMER_CLIENT_OFFSET (220, one-way, a ResetOffsetBody in
// fastjson form) to each online client of the group, which move their
// offsets; the answer is the same ResetOffsetBody. No client online:
// CONSUMER_NOT_ONLINE (206), and the tools then update the offsets on the
// broker (UPDATE_CONSUMER_OFFSET), as mqadmin's resetOffsetByTime does.
func (a *API) invokeBrokerToResetOffset(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, group, ts := f.String("topic"), f.String("group"), f.Int64("timestamp")
	force := f.OptBool("isForce", false)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	table, err := a.ResetOffsetPlan(topic, group, ts, force)
	if err != nil {
		return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
	}
	members := a.host.Consumers(group)
	if len(members) == 0 {
		return req.NewResponse(codeConsumerNotOnline, fmt.Sprintf(
			"Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", group, topic, ts)), nil
	}
	body, err := admin.Marshal(admin.ResetOffsetBody{OffsetTable: table})
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		out := remoting.NewRequest(codeResetConsumerClientOffset, body)
		out.SetExt("topic", topic)
		out.SetExt("group", group)
		out.SetExtInt("timestamp", ts)
		out.SetExtBool("isForce", force)
		if err := m.Conn.InvokeOneway(ctx, out); err != nil {
			a.log.Warn("reset offset: client unreachable", "group", group, "clientID", m.ClientID, "err", err)
		}
	}
	// The broker's own offsets move too, so that a client that restarts
	// before committing, and the tools, see the reset.
	for mq, off := range table {
		a.b.Offsets().Commit("reset-offset", group, topic, mq.QueueID, off)
	}
	a.log.Info("consumer offsets reset", "group", group, "topic", topic, "timestamp", ts, "clients", len(members))
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}

// invokeBrokerToGetConsumerStatus answers
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): header topic, group,
// clientAddr (optional: a client id to ask only that client). It asks
// each client with GET_CONSUMER_STATUS_FROM_CLIENT (221) and answers a
// GetConsumerStatusBody whose consumerTable maps client id to the
// client's offsets.
func (a *API) invokeBrokerToGetConsumerStatus(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, group := f.String("topic"), f.String("group")
	only := f.OptString("clientAddr", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	members := a.host.Consumers(group)
	if len(members) == 0 {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", group)), nil
	}
	out := admin.GetConsumerStatusBody{MessageQueueTable: admin.MQMap[int64]{}, ConsumerTable: map[string]admin.MQMap[int64]{}}
	for _, m := range members {
		if only != "" && only != m.ClientID {
			continue
		}
		q := remoting.NewRequest(codeGetConsumerStatusFromClient, nil)
		q.SetExt("topic", topic)
		q.SetExt("group", group)
		cctx, cancel := context.WithTimeout(ctx, clientCallTimeout)
		resp, err := m.Conn.Invoke(cctx, q)
		cancel()
		if err != nil || resp.Code != remoting.CodeSuccess || len(resp.Body) == 0 {
			a.log.Warn("get consumer status: no answer", "group", group, "clientID", m.ClientID, "err", err)
			continue
		}
		var body admin.GetConsumerStatusBody
		if err := admin.Unmarshal(resp.Body, &body); err != nil {
			a.log.Warn("get consumer status: bad body", "group", group, "clientID", m.ClientID, "err", err)
			continue
		}
		out.ConsumerTable[m.ClientID] = body.MessageQueueTable
	}
	return adminBody(req, out)
}
