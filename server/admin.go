package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// validTopic is TopicValidator's allowed character set.
var validTopic = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// systemTopics may not be created or deleted by tools
// (TopicValidator.isSystemTopic).
var systemTopics = map[string]bool{
	record.DefaultTopic: true, record.SelfTestTopic: true, record.OffsetMovedEventTopic: true,
	record.ScheduleTopic: true, record.TransHalfTopic: true, record.TransOpHalfTopic: true,
	record.TransCheckMaxTimeTopic: true, record.TraceTopic: true, record.BenchmarkTopic: true,
}

func (s *Server) checkAdminTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("the specified topic is blank")
	case len(topic) > 127:
		return errors.New("the specified topic is longer than topic max length 127")
	case !validTopic.MatchString(topic):
		return fmt.Errorf("the specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", topic)
	case topic == s.cfg.ClusterName:
		return fmt.Errorf("the topic[%s] is conflict with system reserved words", topic)
	case systemTopics[topic] || strings.HasPrefix(topic, "rmq_sys_"):
		return fmt.Errorf("the topic[%s] is conflict with system topic", topic)
	}
	return nil
}

// updateAndCreateTopic answers UPDATE_AND_CREATE_TOPIC (17), as the admin
// package's CreateTopic sends it.
func (s *Server) updateAndCreateTopic(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	tc := config.NewTopicConfig(f.String("topic"))
	tc.ReadQueueNums = int(f.Int32("readQueueNums"))
	tc.WriteQueueNums = int(f.Int32("writeQueueNums"))
	tc.Perm = int(f.Int32("perm"))
	tc.TopicFilterType = f.OptString("topicFilterType", "SINGLE_TAG")
	tc.TopicSysFlag = int(f.OptInt32("topicSysFlag", 0))
	tc.Order = f.OptBool("order", false)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if err := s.checkAdminTopic(tc.TopicName); err != nil {
		return badRequest(req, err)
	}
	if tc.Perm < 0 || tc.Perm > 0xF {
		return badRequest(req, fmt.Errorf("perm %d is not a permission", tc.Perm))
	}
	// 5.x's attributes ("+message.type=FIFO"); MIXED needs
	// enableMixedMessageType, which this broker does not offer.
	mods, err := config.ParseAttributes(f.OptString("attributes", ""))
	if err != nil {
		return badRequest(req, err)
	}
	if mods["+"+config.AttrMessageType] == string(config.MessageTypeMixed) {
		return badRequest(req, errors.New("MIXED message type is not supported"))
	}
	if err := s.b.Topics().UpdateAndAlter(tc, mods); err != nil {
		return badRequest(req, err)
	}
	s.log.Info("topic created or updated", "topic", tc.TopicName, "readQueueNums", tc.ReadQueueNums,
		"writeQueueNums", tc.WriteQueueNums, "perm", tc.Perm, "attributes", f.OptString("attributes", ""))
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// deleteTopicInBroker answers DELETE_TOPIC_IN_BROKER (215): the topic
// leaves the topic table, so it has no route and takes no sends, and its
// ConsumeQueues are deleted (the CommitLog bytes go with retention).
// Deleting a missing topic succeeds, as in RocketMQ.
func (s *Server) deleteTopicInBroker(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if err := s.checkAdminTopic(topic); err != nil {
		return badRequest(req, err)
	}
	// RocketMQ's cleanUnusedTopic: the topic's ConsumeQueues go too, so a
	// topic created again under the name starts empty. In a replicated
	// group the deletion goes through the group's log.
	if err := s.b.DeleteTopic(ctx, topic); err != nil {
		return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
	}
	s.log.Info("topic deleted", "topic", topic)
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}
