package proxy

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// Settings the server issues, with RocketMQ 5.x proxy's defaults
// (ProxyConfig: grpcClientProducerMaxAttempts 3, backoff 10 ms to 1 s ×2;
// grpcClientConsumerLongPollingBatchSize 32,
// grpcClientConsumerMaxLongPollingTimeoutMillis 20 s).
const (
	producerMaxAttempts     = 3
	producerBackoffInitial  = 10 * time.Millisecond
	producerBackoffMax      = time.Second
	producerBackoffMultiply = 2
	consumerBatchSize       = 32
	consumerMaxLongPolling  = 20 * time.Second
)

// serverSettings merges the server's part into a client's settings, as
// GrpcClientSettingsManager does: the producer's retry policy and
// publishing limits, or the consumer group's retry policy (max attempts =
// retryMaxTimes+1, the delay levels from the third on as the customized
// backoff) and batch size.
func (p *Proxy) serverSettings(in *rmqpb.Settings) *rmqpb.Settings {
	s := proto.Clone(in).(*rmqpb.Settings)
	switch {
	case s.GetPublishing() != nil:
		s.BackoffPolicy = &rmqpb.RetryPolicy{MaxAttempts: producerMaxAttempts,
			Strategy: &rmqpb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &rmqpb.ExponentialBackoff{
				Initial: durationpb.New(producerBackoffInitial), Max: durationpb.New(producerBackoffMax),
				Multiplier: producerBackoffMultiply}}}
		s.GetPublishing().ValidateMessageType = true
		s.GetPublishing().MaxBodySize = p.maxBodySize()
	case s.GetSubscription() != nil:
		sub := s.GetSubscription()
		g, _, _ := p.b.Groups().Find(sub.GetGroup().GetName())
		retries := 16
		if g.GroupName != "" {
			retries = g.RetryMaxTimes
		}
		sub.ReceiveBatchSize = proto.Int32(consumerBatchSize)
		sub.LongPollingTimeout = durationpb.New(consumerMaxLongPolling)
		sub.Fifo = proto.Bool(p.groupFIFO(sub.GetGroup().GetName()))
		var next []*durationpb.Duration
		levels := p.b.Store().Config().DelayLevels
		for i := 2; i < len(levels); i++ {
			next = append(next, durationpb.New(levels[i]))
		}
		s.BackoffPolicy = &rmqpb.RetryPolicy{MaxAttempts: int32(retries + 1),
			Strategy: &rmqpb.RetryPolicy_CustomizedBackoff{CustomizedBackoff: &rmqpb.CustomizedBackoff{Next: next}}}
	}
	s.Metric = &rmqpb.Metric{On: false}
	return s
}
