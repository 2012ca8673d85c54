package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// Request-reply codes (RocketMQ 4.6+).
const (
	codeSendReplyMessage         int32 = 324
	codeSendReplyMessageV2       int32 = 325
	codePushReplyMessageToClient int32 = 326
)

// Reply message properties (MessageConst).
const (
	propReplyToClient = "REPLY_TO_CLIENT"
	propPushReplyTime = "PUSH_REPLY_TIME"
)

// replyPushTimeout is how long the push to the requester may take
// (Broker2Client.callClient's 10 s).
const replyPushTimeout = 10 * time.Second

// sendReplyMessage answers SEND_REPLY_MESSAGE (324) and
// SEND_REPLY_MESSAGE_V2 (325) as ReplyMessageProcessor: the send checks,
// then PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the producer whose client id
// is the REPLY_TO_CLIENT property, then the message is stored in its
// (reply) topic. The code is the push's: SUCCESS, or SYSTEM_ERROR when
// the property is missing, the requester is not connected (a vanished
// client) or does not answer SUCCESS.
func (s *Server) sendReplyMessage(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	sr, err := sendHeader(req)
	if err != nil {
		return badRequest(req, err)
	}
	sr.BornHost = peer(c)
	chk := s.b.CheckReply(sr)
	if chk.Code != broker.Success {
		return s.withTraceSwitch(reply(req, chk.Code, chk.Remark)), nil
	}
	ok, remark := s.pushReply(ctx, c, req, sr)
	resp := s.withTraceSwitch(req.NewResponse(remoting.CodeSystemError, remark))
	if ok {
		resp = s.withTraceSwitch(req.NewResponse(remoting.CodeSuccess, ""))
		// Zero values so that the client decodes the header.
		resp.SetExt("msgId", "0")
		resp.SetExtInt("queueId", int64(chk.QueueID))
		resp.SetExtInt("queueOffset", 0)
	}
	if res := s.b.StoreReply(ctx, sr, chk.QueueID); res.Code == broker.Success || res.Code == broker.FlushDiskTimeout {
		resp.SetExt("msgId", res.MsgID)
		resp.SetExtInt("queueId", int64(res.QueueID))
		resp.SetExtInt("queueOffset", res.QueueOffset)
	} else {
		s.log.Warn("store reply message", "topic", sr.Topic, "code", res.Code.String(), "remark", res.Remark)
	}
	return resp, nil
}

// noteRequester remembers the connection of a request-reply requester
// (a message with REPLY_TO_CLIENT), so that the reply reaches it before its
// first heartbeat registers it. The substring check keeps ordinary sends
// from parsing their properties.
func (s *Server) noteRequester(c *remoting.Conn, properties string) {
	if !strings.Contains(properties, propReplyToClient) {
		return
	}
	s.producers.requested(record.ParseProperties([]byte(properties))[propReplyToClient], c)
}

// pushReply sends PUSH_REPLY_MESSAGE_TO_CLIENT to the requesting client.
func (s *Server) pushReply(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand, sr *broker.SendRequest) (bool, string) {
	props := record.ParseProperties([]byte(sr.Properties))
	sender, ok := props[propReplyToClient]
	if !ok {
		return false, "reply message properties[" + propReplyToClient + "] is null"
	}
	conn := s.producers.findClient(sender)
	if conn == nil {
		return false, "push reply message fail, channel of <" + sender + "> not found."
	}
	props[propPushReplyTime] = strconv.FormatInt(s.cfg.Clock.Now().UnixMilli(), 10)
	push := remoting.NewRequest(codePushReplyMessageToClient, req.Body)
	for k, v := range map[string]string{"bornHost": peerString(c), "storeHost": s.BrokerAddr(),
		"storeTimestamp": strconv.FormatInt(s.cfg.Clock.Now().UnixMilli(), 10), "producerGroup": sr.ProducerGroup,
		"topic": sr.Topic, "defaultTopic": sr.DefaultTopic, "defaultTopicQueueNums": strconv.Itoa(sr.DefaultTopicQueueNums),
		"queueId": strconv.Itoa(int(sr.QueueID)), "sysFlag": strconv.Itoa(int(sr.SysFlag)),
		"bornTimestamp": strconv.FormatInt(sr.BornTimestamp, 10), "flag": strconv.Itoa(int(sr.Flag)),
		"properties": string(record.AppendProperties(nil, props)), "reconsumeTimes": strconv.Itoa(int(sr.ReconsumeTimes)),
		"unitMode": strconv.FormatBool(sr.UnitMode)} {
		push.SetExt(k, v)
	}
	pctx, cancel := context.WithTimeout(ctx, replyPushTimeout)
	defer cancel()
	resp, err := conn.Invoke(pctx, push)
	if err != nil || resp.Code != remoting.CodeSuccess {
		s.log.Warn("push reply message", "client", sender, "err", err)
		return false, "push reply message to " + sender + "fail."
	}
	return true, ""
}
