package proxy

import (
	"context"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// RecallMessage answers UNSUPPORTED: delayed messages are held by delay
// level, not in a timer store where one could be cancelled.
func (p *Proxy) RecallMessage(context.Context, *rmqpb.RecallMessageRequest) (*rmqpb.RecallMessageResponse, error) {
	return &rmqpb.RecallMessageResponse{Status: status(rmqpb.Code_UNSUPPORTED,
		"rocketstore does not recall delayed messages: delivery timestamps are served by delay levels")}, nil
}

// SyncLiteSubscription answers UNSUPPORTED: rocketstore has no lite topics.
func (p *Proxy) SyncLiteSubscription(context.Context, *rmqpb.SyncLiteSubscriptionRequest) (*rmqpb.SyncLiteSubscriptionResponse, error) {
	return &rmqpb.SyncLiteSubscriptionResponse{Status: status(rmqpb.Code_UNSUPPORTED, "rocketstore does not support lite topics")}, nil
}
