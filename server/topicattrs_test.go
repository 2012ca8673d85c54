package server_test

import (
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// TestUpdateTopicAttributes: UPDATE_AND_CREATE_TOPIC takes 5.x's
// attributes header (mqadmin updateTopic -a) and refuses what RocketMQ
// refuses.
func TestUpdateTopicAttributes(t *testing.T) {
	e := newEnv(t)
	create := func(attrs string) *remoting.RemotingCommand {
		return e.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "F", "readQueueNums", "2",
			"writeQueueNums", "2", "perm", "6", "attributes", attrs)
	}
	wantCode(t, create("+message.type=FIFO"), 0)
	if tc, _ := e.b.Topics().Get("F"); tc.MessageType() != config.MessageTypeFIFO {
		t.Fatalf("F after +message.type=FIFO: %+v", tc)
	}
	// An update without attributes keeps them.
	wantCode(t, e.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "F", "readQueueNums", "4",
		"writeQueueNums", "4", "perm", "6"), 0)
	if tc, _ := e.b.Topics().Get("F"); tc.MessageType() != config.MessageTypeFIFO || tc.ReadQueueNums != 4 {
		t.Fatalf("F after an update without attributes: %+v", tc)
	}
	for attrs, remark := range map[string]string{
		"+message.type=MIXED": "MIXED message type is not supported",
		"+message.type=QUEUE": "not one of",
		"message.type=FIFO":   "format is wrong",
		"+colour=red":         "unsupported key",
	} {
		resp := create(attrs)
		if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, remark) {
			t.Errorf("attributes %q: code %d %q, want SYSTEM_ERROR with %q", attrs, resp.Code, resp.Remark, remark)
		}
	}
}
