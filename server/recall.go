package server

import (
	"context"

	"github.com/rocketstore/rocketstore/remoting"
)

// recallMessage answers RECALL_MESSAGE (370, RocketMQ 5.x): the header
// names the producer group, the topic and the recall handle a timer
// message's send answered; the answer carries the recalled message id.
func (s *Server) recallMessage(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group, topic, handle := f.OptString("producerGroup", ""), f.String("topic"), f.String("recallHandle")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	res := s.b.Recall(ctx, group, topic, handle)
	resp := req.NewResponse(int32(res.Code), res.Remark)
	if res.MsgID != "" {
		resp.SetExt("msgId", res.MsgID)
	}
	return resp, nil
}
