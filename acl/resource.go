package acl

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// Request codes the ACL knows besides those of package remoting. The
// values are RocketMQ's.
const (
	CodeUpdateAndCreateACLConfig     int32 = 50
	CodeDeleteACLConfig              int32 = 51
	CodeGetBrokerClusterACLInfo      int32 = 52
	CodeUpdateGlobalWhiteAddrsConfig int32 = 53
	CodeGetBrokerClusterACLConfig    int32 = 54
	codeUpdateBrokerConfig           int32 = 25
	codeUpdateAndCreateSubGroup      int32 = 200
	codeDeleteSubGroup               int32 = 207
)

// Retry and dead-letter topic prefixes: a group's permission covers them.
const (
	retryPrefix = record.RetryGroupTopicPrefix
	dlqPrefix   = record.DLQGroupTopicPrefix
)

// adminCodes need an admin account: RocketMQ's Permission.ADMIN_CODE
// (17, 25, 215, 200, 207) plus every other request that changes the
// broker's or name server's configuration or other groups' state, which
// RocketMQ 4.9 lets any signed account send: the name server's topic
// deletion (216) and config update (318), KV config writes (100, 102),
// broker write permission (205, 327), offset resets and clones (222,
// 314), and the ACL admin codes (50–54). Read-only admin queries
// (statistics, configs, connections) need only a valid signature, as in
// RocketMQ.
var adminCodes = map[int32]bool{
	remoting.CodeUpdateAndCreateTopic: true, codeUpdateBrokerConfig: true,
	remoting.CodeDeleteTopicInBroker: true, remoting.CodeDeleteTopicInNamesrv: true,
	codeUpdateAndCreateSubGroup: true, codeDeleteSubGroup: true,
	100: true, 102: true, 205: true, 327: true, 318: true, 222: true, 314: true,
	CodeUpdateAndCreateACLConfig: true, CodeDeleteACLConfig: true, CodeGetBrokerClusterACLInfo: true,
	CodeUpdateGlobalWhiteAddrsConfig: true, CodeGetBrokerClusterACLConfig: true,
}

// IsAdminCode reports whether code needs an admin account.
func IsAdminCode(code int32) bool { return adminCodes[code] }

// openCodes are answered without credentials: the name server's route
// queries, which RocketMQ's name server never checks (it has no ACL), and
// which clients that sign only broker requests still need; and broker
// registration (103, 104), which brokers send unsigned to a RocketMQ name
// server.
var openCodes = map[int32]bool{
	remoting.CodeGetRouteInfoByTopic: true, remoting.CodeGetBrokerClusterInfo: true,
	remoting.CodeGetAllTopicListFromNamesrv: true, 103: true, 104: true,
}

// IsOpenCode reports whether code is answered without a signature.
func IsOpenCode(code int32) bool { return openCodes[code] }

// Kind tells topics from consumer groups.
type Kind uint8

// Resource kinds.
const (
	Topic Kind = iota
	Group
)

func (k Kind) String() string {
	if k == Group {
		return "group"
	}
	return "topic"
}

// Need is one permission a request needs on one resource.
type Need struct {
	Kind Kind
	Name string
	Perm Perm
}

func (n Need) String() string { return fmt.Sprintf("%s on %s %s", n.Perm, n.Kind, n.Name) }

// topicNeed maps a topic to the resource it belongs to: a retry or
// dead-letter topic is its consumer group's.
func topicNeed(topic string, p Perm) Need {
	for _, pre := range []string{retryPrefix, dlqPrefix} {
		if g, ok := strings.CutPrefix(topic, pre); ok {
			return Need{Kind: Group, Name: g, Perm: PermSub}
		}
	}
	return Need{Kind: Topic, Name: topic, Perm: p}
}

func groupNeed(g string) Need { return Need{Kind: Group, Name: g, Perm: PermSub} }

// Needs returns the permissions req needs. It follows RocketMQ 4.9's
// PlainAccessValidator.parse and adds the codes it leaves unchecked
// (batch sends, offset and queue queries, queue locks). An error means the
// request is malformed and is refused.
func Needs(req *remoting.RemotingCommand) ([]Need, error) {
	ext := func(k string) string { v, _ := req.Ext(k); return v }
	var out []Need
	add := func(ns ...Need) {
		for _, n := range ns {
			if n.Name != "" {
				out = append(out, n)
			}
		}
	}
	switch req.Code {
	case remoting.CodeSendMessage:
		add(topicNeed(ext("topic"), PermPub))
	case remoting.CodeSendMessageV2, remoting.CodeSendBatchMessage:
		// The broker reads a V2 header (b = topic) when field a is present
		// and a V1 header otherwise; the check must read the same field.
		t := ext("topic")
		if _, v2 := req.Ext("a"); v2 {
			t = ext("b")
		}
		add(topicNeed(t, PermPub))
	case remoting.CodeRecallMessage:
		add(topicNeed(ext("topic"), PermPub))
	case remoting.CodeConsumerSendMsgBack:
		add(groupNeed(ext("group")), topicNeed(ext("originTopic"), PermSub))
	case remoting.CodePullMessage, remoting.CodeQueryConsumerOffset, remoting.CodeUpdateConsumerOffset:
		add(topicNeed(ext("topic"), PermSub), groupNeed(ext("consumerGroup")))
	case remoting.CodeQueryMessage, remoting.CodeSearchOffsetByTimestamp, remoting.CodeGetMaxOffset,
		remoting.CodeGetMinOffset:
		add(topicNeed(ext("topic"), PermSub))
	case remoting.CodeUnregisterClient, remoting.CodeGetConsumerListByGroup:
		add(groupNeed(ext("consumerGroup")))
	case remoting.CodeHeartBeat:
		return heartbeatNeeds(req.Body)
	case remoting.CodeLockBatchMQ, remoting.CodeUnlockBatchMQ:
		return lockNeeds(req.Body)
	}
	return out, nil
}

// maxNeeds bounds the resources one request body may name.
const maxNeeds = 10000

func heartbeatNeeds(body []byte) ([]Need, error) {
	var hb struct {
		ConsumerDataSet []struct {
			GroupName           string `json:"groupName"`
			SubscriptionDataSet []struct {
				Topic string `json:"topic"`
			} `json:"subscriptionDataSet"`
		} `json:"consumerDataSet"`
	}
	if err := json.Unmarshal(body, &hb); err != nil {
		return nil, fmt.Errorf("heartbeat body: %v", err)
	}
	var out []Need
	for _, cd := range hb.ConsumerDataSet {
		out = append(out, groupNeed(cd.GroupName))
		for _, sd := range cd.SubscriptionDataSet {
			out = append(out, topicNeed(sd.Topic, PermSub))
		}
		if len(out) > maxNeeds {
			return nil, fmt.Errorf("heartbeat body names more than %d resources", maxNeeds)
		}
	}
	return out, nil
}

func lockNeeds(body []byte) ([]Need, error) {
	var lb struct {
		ConsumerGroup string `json:"consumerGroup"`
		MQSet         []struct {
			Topic string `json:"topic"`
		} `json:"mqSet"`
	}
	if err := json.Unmarshal(body, &lb); err != nil {
		return nil, fmt.Errorf("lock body: %v", err)
	}
	if len(lb.MQSet) > maxNeeds {
		return nil, fmt.Errorf("lock body names more than %d queues", maxNeeds)
	}
	out := []Need{groupNeed(lb.ConsumerGroup)}
	for _, mq := range lb.MQSet {
		out = append(out, topicNeed(mq.Topic, PermSub))
	}
	return out, nil
}
