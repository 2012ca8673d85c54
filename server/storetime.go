package server

import (
	"context"

	"github.com/rocketstore/rocketstore/remoting"
)

// codeGetEarliestMsgStoretime is GET_EARLIEST_MSG_STORETIME.
const codeGetEarliestMsgStoretime int32 = 32

// getEarliestMsgStoretime answers GET_EARLIEST_MSG_STORETIME (32): ext
// timestamp, the store time of the queue's first message, or -1 (always
// SUCCESS, as AdminBrokerProcessor answers).
func (s *Server) getEarliestMsgStoretime(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f, topic, qid := queueHeader(req)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExtInt("timestamp", s.b.EarliestMessageTime(topic, qid))
	return resp, nil
}
