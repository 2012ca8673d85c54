package server

import (
	"context"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// queryConsumerOffset answers QUERY_CONSUMER_OFFSET (14): ext offset, or
// QUERY_NOT_FOUND (22) when the group has no offset for the queue.
func (s *Server) queryConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group, topic, qid := f.String("consumerGroup"), f.String("topic"), f.Int32("queueId")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	code, off := s.b.QueryConsumerOffset(group, topic, qid)
	if code != broker.Success {
		return reply(req, code, "Not found, maybe this group consumer boot first"), nil
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExtInt("offset", off)
	return resp, nil
}

// updateConsumerOffset answers UPDATE_CONSUMER_OFFSET (15). The Go client
// commits -1 for queues it never consumed (its retry queue, typically);
// such a commit is acknowledged and ignored, so that it cannot erase an
// offset or be persisted.
func (s *Server) updateConsumerOffset(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group, topic, qid, off := f.String("consumerGroup"), f.String("topic"), f.Int32("queueId"), f.Int64("commitOffset")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if off < 0 {
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	}
	if code, remark := s.b.UpdateConsumerOffset(peerString(c), group, topic, qid, off); code != broker.Success {
		return reply(req, code, remark), nil
	}
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// queueHeader reads the topic and queueId of the offset requests.
func queueHeader(req *remoting.RemotingCommand) (*remoting.FieldReader, string, int32) {
	f := req.Fields()
	return f, f.String("topic"), f.Int32("queueId")
}

func offsetResponse(req *remoting.RemotingCommand, off int64) *remoting.RemotingCommand {
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExtInt("offset", off)
	return resp
}

// getMaxOffset answers GET_MAX_OFFSET (30): the queue's next offset.
func (s *Server) getMaxOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f, topic, qid := queueHeader(req)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	return offsetResponse(req, s.b.Store().MaxOffsetInQueue(topic, qid)), nil
}

// getMinOffset answers GET_MIN_OFFSET (31).
func (s *Server) getMinOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f, topic, qid := queueHeader(req)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	return offsetResponse(req, s.b.Store().MinOffsetInQueue(topic, qid)), nil
}

// searchOffsetByTimestamp answers SEARCH_OFFSET_BY_TIMESTAMP (29): ext
// timestamp (ms); see broker.SearchOffsetByTimestamp.
func (s *Server) searchOffsetByTimestamp(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f, topic, qid := queueHeader(req)
	ts := f.Int64("timestamp")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	return offsetResponse(req, s.b.SearchOffsetByTimestamp(topic, qid, ts)), nil
}
