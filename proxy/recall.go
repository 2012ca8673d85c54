package proxy

import (
	"context"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// RecallMessage cancels a pending timer message by the recall handle its
// send answered (RocketMQ 5.x's RecallMessageActivity). A handle that
// does not decode or names another topic answers BAD_REQUEST, as does a
// message already delivered.
func (p *Proxy) RecallMessage(ctx context.Context, req *rmqpb.RecallMessageRequest) (*rmqpb.RecallMessageResponse, error) {
	topic := req.GetTopic().GetName()
	if st := validTopic(topic); st != nil {
		return &rmqpb.RecallMessageResponse{Status: st}, nil
	}
	if st := p.authorize(ctx, topicNeed(topic, acl.PermPub)); st != nil {
		return &rmqpb.RecallMessageResponse{Status: st}, nil
	}
	res := p.b.Recall(ctx, topic, topic, req.GetRecallHandle())
	switch res.Code {
	case broker.Success:
		return &rmqpb.RecallMessageResponse{Status: okStatus, MessageId: res.MsgID}, nil
	case broker.IllegalOperation:
		return &rmqpb.RecallMessageResponse{Status: status(rmqpb.Code_BAD_REQUEST, res.Remark)}, nil
	}
	return &rmqpb.RecallMessageResponse{Status: brokerStatus(res.Code, res.Remark)}, nil
}
