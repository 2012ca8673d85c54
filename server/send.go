package server

import (
	"context"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// sendMessage answers SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and
// SEND_BATCH_MESSAGE (320): ext msgId, queueId and queueOffset on success.
func (s *Server) sendMessage(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	var sendReq broker.SendRequest // on the stack: SendMessage keeps no pointer to it
	sr := &sendReq
	if err := readSendHeader(req, sr); err != nil {
		return s.refuse(req, c, err)
	}
	if req.Code == remoting.CodeSendBatchMessage && !sr.Batch {
		s.log.Warn("SEND_BATCH_MESSAGE without the batch flag: stored as one message, as RocketMQ 4.x does",
			"topic", sr.Topic, "remote", peerString(c))
	}
	sr.BornHost, sr.Cluster = peer(c), s.cfg.ClusterName
	var start time.Time
	if s.metrics != nil { // a clock read costs ~70 ns on a VM: only when measured
		start = time.Now()
	}
	res := s.b.SendMessage(ctx, sr)
	if s.metrics != nil {
		s.metrics.Put(res.Code.String(), res.Code == broker.Success || res.Code == broker.FlushDiskTimeout,
			res.MsgNum, len(req.Body), time.Since(start))
	}
	if res.Code != broker.Success && res.Code != broker.FlushDiskTimeout {
		if sr.Batch && res.Code == broker.MessageIllegal {
			s.log.Warn("batch send refused", "topic", sr.Topic, "field", "batch", "value", "true",
				"remark", res.Remark, "remote", peerString(c))
		}
		s.log.Debug("send rejected", "topic", sr.Topic, "code", res.Code.String(), "remark", res.Remark, "remote", peerString(c))
		return s.withTraceSwitch(reply(req, res.Code, res.Remark)), nil
	}
	s.topicUsed(sr.Topic)
	s.noteRequester(c, sr.Properties)
	// No extFields map: the answer's five entries go in a slice.
	resp := s.withTraceSwitch(req.NewLeanResponse(int32(res.Code), res.Remark))
	resp.SetExt("msgId", res.MsgID)
	resp.SetExtInt("queueId", int64(res.QueueID))
	resp.SetExtInt("queueOffset", res.QueueOffset)
	if res.RecallHandle != "" {
		resp.SetExt("recallHandle", res.RecallHandle)
	}
	return resp, nil
}
