package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// consumerSendMsgBack answers CONSUMER_SEND_MSG_BACK (36): the message at
// the CommitLog offset goes to the group's retry topic with a delay, or
// to its DLQ (see broker.SendMsgBack).
func (s *Server) consumerSendMsgBack(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	r := &broker.SendMsgBackRequest{
		Offset:      f.Int64("offset"),
		Group:       f.String("group"),
		DelayLevel:  int(f.Int32("delayLevel")),
		OriginMsgID: f.OptString("originMsgId", ""),
		OriginTopic: f.OptString("originTopic", ""),
		UnitMode:    f.OptBool("unitMode", false),
	}
	if _, ok := req.Ext("maxReconsumeTimes"); ok {
		v := f.Int32("maxReconsumeTimes")
		r.MaxReconsumeTimes = &v
	}
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	res := s.b.SendMsgBack(ctx, r)
	if s.metrics != nil {
		s.metrics.SendBack(res.Code.String())
	}
	return reply(req, res.Code, res.Remark), nil
}

// queryMessage answers QUERY_MESSAGE (12): the messages of topic whose
// KEYS or UNIQ_KEY is key, stored in [beginTimestamp, endTimestamp], as
// concatenated records; QUERY_NOT_FOUND (22) when there is none.
func (s *Server) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, key := f.String("topic"), f.String("key")
	maxNum := f.Int32("maxNum")
	begin, end := f.Int64("beginTimestamp"), f.Int64("endTimestamp")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if maxNum <= 0 {
		return badRequest(req, fmt.Errorf("%w: maxNum %d must be positive", remoting.ErrBadField, maxNum))
	}
	res, err := s.b.QueryMessage(topic, key, int(min(maxNum, 64)), begin, end)
	if errors.Is(err, broker.ErrIndexDisabled) {
		return req.NewResponse(remoting.CodeSystemError, "the message index is disabled on this broker"), nil
	}
	if err != nil {
		return nil, err
	}
	if len(res.Messages) == 0 {
		return req.NewResponse(remoting.CodeQueryNotFound, "can not find message, maybe time range not correct"), nil
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExtInt("indexLastUpdateTimestamp", res.IndexLastUpdateTimestamp)
	resp.SetExtInt("indexLastUpdatePhyOffset", res.IndexLastUpdatePhyOffset)
	for _, m := range res.Messages {
		if resp.Body, err = record.AppendMessageExt(resp.Body, m); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// viewMessageByID answers VIEW_MESSAGE_BY_ID (33): ext offset is the
// CommitLog offset (the client decodes it from the offset message id);
// the body is that record.
func (s *Server) viewMessageByID(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	off := f.Int64("offset")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	m, err := s.b.Store().LookMessageByOffset(off)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, record.ErrCorrupt) || errors.Is(err, record.ErrTruncated) {
			return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("can not find message by the offset, %d", off)), nil
		}
		return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	if resp.Body, err = record.AppendMessageExt(nil, m); err != nil {
		return nil, err
	}
	return resp, nil
}
