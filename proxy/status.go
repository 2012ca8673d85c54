package proxy

import (
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// status builds a Status; an empty message is the code's name, as the
// Java proxy's ResponseBuilder does.
func status(c rmqpb.Code, msg string) *rmqpb.Status {
	if msg == "" {
		msg = c.String()
	}
	return &rmqpb.Status{Code: c, Message: msg}
}

var okStatus = status(rmqpb.Code_OK, "")

// codeOf maps a broker response code to the Code a RocketMQ 5.x proxy
// answers for it (ResponseBuilder's mapping, plus the codes whose meaning
// the Java proxy catches before the broker: a missing topic, a queue
// without the permission, an oversized message).
func codeOf(c broker.ResponseCode) rmqpb.Code {
	switch c {
	case broker.Success:
		return rmqpb.Code_OK
	case broker.SystemBusy:
		return rmqpb.Code_TOO_MANY_REQUESTS
	case broker.RequestCodeNotSupported:
		return rmqpb.Code_NOT_IMPLEMENTED
	case broker.SubscriptionGroupNotExist:
		return rmqpb.Code_CONSUMER_GROUP_NOT_FOUND
	case broker.TopicNotExist:
		return rmqpb.Code_TOPIC_NOT_FOUND
	case broker.NoPermission:
		return rmqpb.Code_FORBIDDEN
	case broker.FlushDiskTimeout:
		return rmqpb.Code_MASTER_PERSISTENCE_TIMEOUT
	case broker.MessageIllegal:
		return rmqpb.Code_BAD_REQUEST
	case broker.ServiceNotAvailable:
		return rmqpb.Code_TOO_MANY_REQUESTS
	}
	return rmqpb.Code_INTERNAL_SERVER_ERROR
}

// brokerStatus is the Status of a broker answer: the mapped code with the
// broker's remark.
func brokerStatus(c broker.ResponseCode, remark string) *rmqpb.Status {
	if remark == "" {
		remark = c.String()
	}
	return status(codeOf(c), remark)
}
