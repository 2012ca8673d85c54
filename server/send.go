package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// sendFields are the names of SendMessageRequestHeader's fields, and
// sendFieldsV2 SendMessageRequestHeaderV2's one-letter names for the same
// fields (codes 310 and 320).
var (
	sendFields = [...]string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes"}
	sendFieldsV2 = [...]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
)

// sendHeader decodes a send request's header, V1 or V2. A V2 header is
// read under its one-letter names in place (no translated copy of the
// map); errors name the field by its long name either way.
func sendHeader(req *remoting.RemotingCommand) (*broker.SendRequest, error) {
	names := &sendFields
	if req.Code != remoting.CodeSendMessage {
		if _, v2 := req.Ext("a"); v2 {
			names = &sendFieldsV2
		}
	}
	f := req.Fields()
	sr := &broker.SendRequest{
		ProducerGroup:         f.String(names[0]),
		Topic:                 f.String(names[1]),
		DefaultTopic:          f.String(names[2]),
		DefaultTopicQueueNums: int(f.Int32(names[3])),
		QueueID:               f.Int32(names[4]),
		SysFlag:               f.Int32(names[5]),
		BornTimestamp:         f.Int64(names[6]),
		Flag:                  f.Int32(names[7]),
		Properties:            f.OptString(names[8], ""),
		ReconsumeTimes:        f.OptInt32(names[9], 0),
		UnitMode:              f.OptBool(names[10], false),
		Body:                  req.Body,
	}
	batchName := "batch"
	if names == &sendFieldsV2 {
		batchName = "m"
	}
	batch, err := batchFlag(req, batchName)
	if err != nil {
		return nil, err
	}
	// The header's flag decides, as the 4.x broker's
	// requestHeader.isBatch(): the C++ client sends batches as
	// SEND_MESSAGE_V2 with m=true.
	sr.Batch = batch
	if _, ok := req.Ext(names[11]); ok {
		v := f.Int32(names[11])
		sr.MaxReconsumeTimes = &v
	}
	if err := f.Err(); err != nil {
		if names == &sendFieldsV2 {
			err = fmt.Errorf("%w (SendMessageRequestHeaderV2: a=producerGroup b=topic c=defaultTopic "+
				"d=defaultTopicQueueNums e=queueId f=sysFlag g=bornTimestamp h=flag i=properties)", err)
		}
		return sr, err
	}
	return sr, nil
}

// batchFlag reads the batch flag ("batch"; "m" in the V2 header). The
// Java broker's Boolean.parseBoolean would read anything but "true" as
// false; a value that is neither true nor false is refused instead, so
// that a client's batch is never stored as one message by a guess.
func batchFlag(r *remoting.RemotingCommand, name string) (bool, error) {
	v, ok := r.Ext(name)
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%w: batch flag %q = %q is not true or false (request code %d)", remoting.ErrBadField, name, v, r.Code)
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
