package proxy

import (
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// conflictPrefix starts the message of a MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
// status: RocketMQ's proxy wraps its ProxyException in a GrpcProxyException
// by cause, so the status message is the Java exception's toString.
const conflictPrefix = "org.apache.rocketmq.proxy.common.ProxyException: "

// checkMessageType refuses a send whose first message's type differs from
// the topic's message.type, as RocketMQ 5.x's ProducerProcessor does
// (enableTopicMessageTypeCheck, on by default): it checks the first
// message of the request only, skips retry and dead-letter topics, and
// the refusal fails the whole request. The type is read from the
// properties to be stored (TopicMessageType.parseFromMessageProperty),
// not from the client's declared type: props is the map sendRequest
// encodes, without empty values (which the encoding drops).
func checkMessageType(tc config.TopicConfig, props map[string]string) *rmqpb.Status {
	if strings.HasPrefix(tc.TopicName, record.RetryGroupTopicPrefix) || strings.HasPrefix(tc.TopicName, record.DLQGroupTopicPrefix) {
		return nil
	}
	if err := config.CheckMessageType(tc.MessageType(), config.MessageTypeOf(props)); err != nil {
		return status(rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflictPrefix+err.Error())
	}
	return nil
}

// acceptTypes are the message types a topic accepts, as QueryRoute
// reports them (RouteActivity.parseTopicMessageType): its message.type,
// all four for MIXED.
func acceptTypes(tc config.TopicConfig) []rmqpb.MessageType {
	switch tc.MessageType() {
	case config.MessageTypeNormal:
		return []rmqpb.MessageType{rmqpb.MessageType_NORMAL}
	case config.MessageTypeFIFO:
		return []rmqpb.MessageType{rmqpb.MessageType_FIFO}
	case config.MessageTypeDelay:
		return []rmqpb.MessageType{rmqpb.MessageType_DELAY}
	case config.MessageTypeTransaction:
		return []rmqpb.MessageType{rmqpb.MessageType_TRANSACTION}
	case config.MessageTypeMixed:
		return []rmqpb.MessageType{rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO, rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION}
	}
	return []rmqpb.MessageType{rmqpb.MessageType_MESSAGE_TYPE_UNSPECIFIED}
}

// topicFIFO reports whether a topic delivers message groups in order to
// pop consumers: a topic of message type FIFO. (RocketMQ 5.x asks the
// group for consumeMessageOrderly instead; the topic's type is what a
// FIFO producer must already have set, so it decides here.)
func topicFIFO(tc config.TopicConfig) bool {
	return tc.MessageType() == config.MessageTypeFIFO
}
