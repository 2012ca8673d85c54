package proxy

import (
	"context"
	"strings"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// topicConfig returns a topic's configuration; retry and dead-letter
// topics always have one queue (as the remoting name server answers).
func (p *Proxy) topicConfig(topic string) (config.TopicConfig, bool) {
	tc, ok := p.b.Topics().Get(topic)
	if !ok && (strings.HasPrefix(topic, record.RetryGroupTopicPrefix) || strings.HasPrefix(topic, record.DLQGroupTopicPrefix)) {
		tc = config.NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
		return tc, true
	}
	return tc, ok
}

func (p *Proxy) broker() *rmqpb.Broker {
	return &rmqpb.Broker{Name: p.cfg.BrokerName, Id: 0, Endpoints: p.endpoints()}
}

// QueryRoute answers the topic's queues, all on this endpoint, split by
// permission as RocketMQ's RouteActivity splits them (read-only, then
// write-only, then read-write queues), with the topic's accepted message
// types. An unknown topic is TOPIC_NOT_FOUND: 5.x clients do not create
// topics by sending.
func (p *Proxy) QueryRoute(ctx context.Context, req *rmqpb.QueryRouteRequest) (*rmqpb.QueryRouteResponse, error) {
	topic := req.GetTopic().GetName()
	if st := validTopic(topic); st != nil {
		return &rmqpb.QueryRouteResponse{Status: st}, nil
	}
	if st := p.authorize(ctx); st != nil {
		return &rmqpb.QueryRouteResponse{Status: st}, nil
	}
	tc, ok := p.topicConfig(topic)
	if !ok {
		return &rmqpb.QueryRouteResponse{Status: status(rmqpb.Code_TOPIC_NOT_FOUND, "topic "+topic+" does not exist")}, nil
	}
	types := acceptTypes(tc)
	b := p.broker()
	var mqs []*rmqpb.MessageQueue
	add := func(n int, perm rmqpb.Permission) {
		for range n {
			mqs = append(mqs, &rmqpb.MessageQueue{Topic: req.GetTopic(), Id: int32(len(mqs)), Permission: perm,
				Broker: b, AcceptMessageTypes: types})
		}
	}
	r, w := tc.Perm&record.PermRead != 0, tc.Perm&record.PermWrite != 0
	switch {
	case r && w:
		rw := min(tc.ReadQueueNums, tc.WriteQueueNums)
		add(tc.ReadQueueNums-rw, rmqpb.Permission_READ)
		add(tc.WriteQueueNums-rw, rmqpb.Permission_WRITE)
		add(rw, rmqpb.Permission_READ_WRITE)
	case w:
		add(tc.WriteQueueNums, rmqpb.Permission_WRITE)
	case r:
		add(tc.ReadQueueNums, rmqpb.Permission_READ)
	default:
		add(max(1, tc.ReadQueueNums, tc.WriteQueueNums), rmqpb.Permission_NONE)
	}
	return &rmqpb.QueryRouteResponse{Status: okStatus, MessageQueues: mqs}, nil
}

// QueryAssignment answers the queues a push consumer of the group
// receives from: one assignment of queue -1 (any queue: pop) on this
// broker, or every readable queue of a FIFO topic; FORBIDDEN when the
// topic has no readable queue.
func (p *Proxy) QueryAssignment(ctx context.Context, req *rmqpb.QueryAssignmentRequest) (*rmqpb.QueryAssignmentResponse, error) {
	topic, group := req.GetTopic().GetName(), req.GetGroup().GetName()
	if st := validTopic(topic); st != nil {
		return &rmqpb.QueryAssignmentResponse{Status: st}, nil
	}
	if st := validGroup(group); st != nil {
		return &rmqpb.QueryAssignmentResponse{Status: st}, nil
	}
	if st := p.authorize(ctx, topicNeed(topic, acl.PermSub), groupNeed(group)); st != nil {
		return &rmqpb.QueryAssignmentResponse{Status: st}, nil
	}
	tc, ok := p.topicConfig(topic)
	if !ok {
		return &rmqpb.QueryAssignmentResponse{Status: status(rmqpb.Code_TOPIC_NOT_FOUND, "topic "+topic+" does not exist")}, nil
	}
	if tc.Perm&record.PermRead == 0 || tc.ReadQueueNums <= 0 {
		return &rmqpb.QueryAssignmentResponse{Status: status(rmqpb.Code_FORBIDDEN, "no readable queue")}, nil
	}
	b := p.broker()
	var as []*rmqpb.Assignment
	if topicFIFO(tc) {
		for i := range tc.ReadQueueNums {
			as = append(as, &rmqpb.Assignment{MessageQueue: &rmqpb.MessageQueue{Topic: req.GetTopic(), Id: int32(i),
				Permission: permission(tc.Perm), Broker: b}})
		}
	} else {
		as = append(as, &rmqpb.Assignment{MessageQueue: &rmqpb.MessageQueue{Topic: req.GetTopic(), Id: -1,
			Permission: permission(tc.Perm), Broker: b}})
	}
	return &rmqpb.QueryAssignmentResponse{Status: okStatus, Assignments: as}, nil
}

func permission(perm int) rmqpb.Permission {
	r, w := perm&record.PermRead != 0, perm&record.PermWrite != 0
	switch {
	case r && w:
		return rmqpb.Permission_READ_WRITE
	case r:
		return rmqpb.Permission_READ
	case w:
		return rmqpb.Permission_WRITE
	}
	return rmqpb.Permission_NONE
}

func groupNeed(group string) acl.Need { return acl.GroupNeed(group) }

// validTopic is GrpcValidator.validateTopic: not empty, at most 127
// characters of RocketMQ's topic character set.
func validTopic(topic string) *rmqpb.Status {
	if topic == "" || len(topic) > 127 || !validName(topic) {
		return status(rmqpb.Code_ILLEGAL_TOPIC, "topic name "+quote(topic)+" is not valid: 1-127 characters of [%|a-zA-Z0-9_-]")
	}
	return nil
}

// validGroup is GrpcValidator.validateConsumerGroup.
func validGroup(group string) *rmqpb.Status {
	if group == "" || len(group) > 255 || !validName(group) {
		return status(rmqpb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group "+quote(group)+" is not valid: 1-255 characters of [%|a-zA-Z0-9_-]")
	}
	return nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|') {
			return false
		}
	}
	return true
}

func quote(s string) string { return "\"" + s + "\"" }
