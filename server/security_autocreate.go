package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// This file holds the limits on topics created by sending to them
// (autoCreateTopicEnable): who may create one, how many, with how many
// queues.

func isSendCode(code int32) bool {
	return code == remoting.CodeSendMessage || code == remoting.CodeSendMessageV2 || code == remoting.CodeSendBatchMessage
}

// sendFields returns the names of a send header's topic and
// defaultTopicQueueNums fields (V1 or V2).
func sendTopicFields(req *remoting.RemotingCommand) (topic, queueNums string) {
	if _, v2 := req.Ext("a"); v2 && req.Code != remoting.CodeSendMessage { // as sendHeader
		return "b", "d"
	}
	return "topic", "defaultTopicQueueNums"
}

// autoCreate applies the auto-creation rules to a send to a topic that
// does not exist: with ACL, only an admin or an account whose topicPerms
// grant PUB on the topic may create it; the per-client and total topic
// limits hold; the queue count is capped. It returns a refusal, or a
// function to call once the send is answered.
func (sec *security) autoCreate(c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, func()) {
	tf, qf := sendTopicFields(req)
	topic, _ := req.Ext(tf)
	if topic == "" || strings.HasPrefix(topic, record.RetryGroupTopicPrefix) || strings.HasPrefix(topic, record.DLQGroupTopicPrefix) {
		return nil, nil
	}
	if _, ok := sec.s.b.Topics().Get(topic); ok {
		return nil, nil
	}
	ak, _ := req.Ext(acl.FieldAccessKey)
	refuse := func(code int32, reason, remark string) (*remoting.RemotingCommand, func()) {
		sec.count(func(m SecurityMetrics) { m.AutoCreateRefused(reason) })
		sec.logDenial("topic auto-creation refused", "topic", topic, "remote", peerString(c), "accessKey", ak, "reason", reason)
		return req.NewResponse(code, remark), nil
	}
	if sec.acl != nil && !sec.acl.HasExplicitPub(ak, topic, peer(c).Addr()) {
		return refuse(remoting.CodeNoPermission, "acl", fmt.Sprintf(
			"ACL: accessKey=%s may not create topic %s: auto-creation needs an admin account or topicPerms %s=PUB", ak, topic, topic))
	}
	l := sec.cfg.Limits
	if n := l.AutoCreateTopicMaxQueueNums; n > 0 {
		q, _ := req.Ext(qf)
		if v, err := strconv.Atoi(q); err == nil && v > n {
			req.SetExt(qf, strconv.Itoa(n))
		}
	}
	if l.AutoCreateTopicMaxTotal > 0 {
		if all, _ := sec.s.b.Topics().All(); len(all) >= l.AutoCreateTopicMaxTotal {
			return refuse(remoting.CodeTopicNotExist, "max_total", fmt.Sprintf(
				"topic[%s] not exist and the broker has %d topics, its limit for auto-creation; create it with the admin tools", topic, len(all)))
		}
	}
	if l.AutoCreateTopicMaxPerClient <= 0 {
		return nil, nil
	}
	client := ak
	if sec.acl == nil || client == "" {
		client = peer(c).Addr().String()
	}
	sec.mu.Lock()
	if sec.created[client] >= l.AutoCreateTopicMaxPerClient {
		sec.mu.Unlock()
		return refuse(remoting.CodeTopicNotExist, "max_per_client", fmt.Sprintf(
			"topic[%s] not exist and client %s has auto-created %d topics, its limit; create it with the admin tools", topic, client, l.AutoCreateTopicMaxPerClient))
	}
	sec.created[client]++ // reserved; returned if the send did not create the topic
	sec.mu.Unlock()
	return nil, func() {
		if _, ok := sec.s.b.Topics().Get(topic); !ok {
			sec.mu.Lock()
			sec.created[client]--
			sec.mu.Unlock()
		}
	}
}
