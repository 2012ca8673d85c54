package proxy

import (
	"context"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// SyncLiteSubscription answers UNSUPPORTED: rocketstore has no lite topics.
func (p *Proxy) SyncLiteSubscription(context.Context, *rmqpb.SyncLiteSubscriptionRequest) (*rmqpb.SyncLiteSubscriptionResponse, error) {
	return &rmqpb.SyncLiteSubscriptionResponse{Status: status(rmqpb.Code_UNSUPPORTED, "rocketstore does not support lite topics")}, nil
}
