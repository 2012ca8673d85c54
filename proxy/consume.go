package proxy

import (
	"context"

	"google.golang.org/grpc"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// popUnsupported is the answer of the pop RPCs until the store keeps pop
// state.
var popUnsupported = status(rmqpb.Code_UNSUPPORTED, "pop consumption (SimpleConsumer, PushConsumer) is not available in this build")

// ReceiveMessage is the pop read of SimpleConsumer and PushConsumer.
func (p *Proxy) ReceiveMessage(_ *rmqpb.ReceiveMessageRequest, stream grpc.ServerStreamingServer[rmqpb.ReceiveMessageResponse]) error {
	return stream.Send(&rmqpb.ReceiveMessageResponse{Content: &rmqpb.ReceiveMessageResponse_Status{Status: popUnsupported}})
}

// AckMessage acknowledges received messages.
func (p *Proxy) AckMessage(context.Context, *rmqpb.AckMessageRequest) (*rmqpb.AckMessageResponse, error) {
	return &rmqpb.AckMessageResponse{Status: popUnsupported}, nil
}

// ChangeInvisibleDuration changes when a received message becomes
// visible again.
func (p *Proxy) ChangeInvisibleDuration(context.Context, *rmqpb.ChangeInvisibleDurationRequest) (*rmqpb.ChangeInvisibleDurationResponse, error) {
	return &rmqpb.ChangeInvisibleDurationResponse{Status: popUnsupported}, nil
}

// ForwardMessageToDeadLetterQueue moves a received message to the
// group's DLQ.
func (p *Proxy) ForwardMessageToDeadLetterQueue(context.Context, *rmqpb.ForwardMessageToDeadLetterQueueRequest) (*rmqpb.ForwardMessageToDeadLetterQueueResponse, error) {
	return &rmqpb.ForwardMessageToDeadLetterQueueResponse{Status: popUnsupported}, nil
}

// groupFIFO reports whether a group consumes in order (message groups).
func (p *Proxy) groupFIFO(string) bool { return false }

// acceptTypes are the message types a topic accepts: all of them until
// topics carry a message.type attribute.
func (p *Proxy) acceptTypes(config.TopicConfig) []rmqpb.MessageType {
	return []rmqpb.MessageType{rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO, rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION}
}
