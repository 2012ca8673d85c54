package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// v2Names maps SendMessageRequestHeaderV2's one-letter fields (codes 310
// and 320) to SendMessageRequestHeader's names.
var v2Names = map[string]string{
	"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
	"e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
	"j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}

// sendHeader decodes a send request's header, V1 or V2.
func sendHeader(req *remoting.RemotingCommand) (*broker.SendRequest, error) {
	r := req
	if req.Code != remoting.CodeSendMessage {
		if _, v2 := req.ExtFields["a"]; v2 {
			r = &remoting.RemotingCommand{Code: req.Code, ExtFields: make(map[string]string, len(req.ExtFields))}
			for k, v := range req.ExtFields {
				if n, ok := v2Names[k]; ok {
					k = n
				}
				r.ExtFields[k] = v
			}
		}
	}
	f := r.Fields()
	sr := &broker.SendRequest{
		ProducerGroup:         f.String("producerGroup"),
		Topic:                 f.String("topic"),
		DefaultTopic:          f.String("defaultTopic"),
		DefaultTopicQueueNums: int(f.Int32("defaultTopicQueueNums")),
		QueueID:               f.Int32("queueId"),
		SysFlag:               f.Int32("sysFlag"),
		BornTimestamp:         f.Int64("bornTimestamp"),
		Flag:                  f.Int32("flag"),
		Properties:            f.OptString("properties", ""),
		ReconsumeTimes:        f.OptInt32("reconsumeTimes", 0),
		UnitMode:              f.OptBool("unitMode", false),
		Body:                  req.Body,
	}
	batch, err := batchFlag(r)
	if err != nil {
		return nil, err
	}
	// The header's flag decides, as the 4.x broker's
	// requestHeader.isBatch(): the C++ client sends batches as
	// SEND_MESSAGE_V2 with m=true.
	sr.Batch = batch
	if _, ok := r.ExtFields["maxReconsumeTimes"]; ok {
		v := f.Int32("maxReconsumeTimes")
		sr.MaxReconsumeTimes = &v
	}
	return sr, f.Err()
}

// batchFlag reads the batch flag ("batch"; "m" in the V2 header). The
// Java broker's Boolean.parseBoolean would read anything but "true" as
// false; a value that is neither true nor false is refused instead, so
// that a client's batch is never stored as one message by a guess.
func batchFlag(r *remoting.RemotingCommand) (bool, error) {
	v, ok := r.ExtFields["batch"]
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%w: batch flag %q = %q is not true or false (request code %d)", remoting.ErrBadField, "batch", v, r.Code)
}

// sendMessage answers SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and
// SEND_BATCH_MESSAGE (320): ext msgId, queueId and queueOffset on success.
func (s *Server) sendMessage(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	sr, err := sendHeader(req)
	if err != nil {
		return s.refuse(req, c, err)
	}
	if req.Code == remoting.CodeSendBatchMessage && !sr.Batch {
		s.log.Warn("SEND_BATCH_MESSAGE without the batch flag: stored as one message, as RocketMQ 4.x does",
			"topic", sr.Topic, "remote", peerString(c))
	}
	sr.BornHost, sr.Cluster = peer(c), s.cfg.ClusterName
	start := time.Now()
	res := s.b.SendMessage(ctx, sr)
	if s.metrics != nil {
		s.metrics.put(res, len(req.Body), time.Since(start))
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
	resp := s.withTraceSwitch(reply(req, res.Code, res.Remark))
	resp.SetExt("msgId", res.MsgID)
	resp.SetExtInt("queueId", int64(res.QueueID))
	resp.SetExtInt("queueOffset", res.QueueOffset)
	return resp, nil
}
