package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func producerHeartbeat(t *testing.T, cl *remoting.Client, clientID, group string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"clientID": clientID,
		"producerDataSet": []any{map[string]any{"groupName": group}}, "consumerDataSet": []any{}})
	wantCode(t, call(t, cl, remoting.CodeHeartBeat, body), remoting.CodeSuccess)
}

func TestRequestReply(t *testing.T) {
	closed := make(chan struct{}, 4)
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) {
		// Called after the server forgot the connection's producers.
		sc.Remoting.OnClose = func(*remoting.Conn, error) { signal(closed) }
	})
	pushed := make(chan *remoting.RemotingCommand, 1)
	requester := e.dial(remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if req.Code != 326 {
			return req.NewResponse(remoting.CodeRequestCodeNotSupported, ""), nil
		}
		pushed <- req
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	}))
	t.Cleanup(func() { _ = requester.Close() })
	producerHeartbeat(t, requester, "req-1", "PG")

	replyProps := props("REPLY_TO_CLIENT", "req-1", "CORRELATION_ID", "c-42", "MSG_TYPE", "reply")
	sendReply := func(code int32, p string) *remoting.RemotingCommand {
		return e.call(code, []byte("the answer"), "producerGroup", "RG", "topic", "DefaultCluster_REPLY_TOPIC",
			"defaultTopic", "TBW102", "defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "0",
			"bornTimestamp", "1", "flag", "0", "properties", p, "reconsumeTimes", "0", "unitMode", "false")
	}
	resp := sendReply(324, replyProps)
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["TRACE_ON"] != "true" {
		t.Fatalf("reply response: %v", resp.ExtFields)
	}
	select {
	case p := <-pushed:
		if string(p.Body) != "the answer" || p.ExtFields["topic"] != "DefaultCluster_REPLY_TOPIC" {
			t.Fatalf("push: %v %q", p.ExtFields, p.Body)
		}
		pp := record.ParseProperties([]byte(p.ExtFields["properties"]))
		if pp["CORRELATION_ID"] != "c-42" || pp["PUSH_REPLY_TIME"] == "" {
			t.Fatalf("pushed properties: %v", pp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no PUSH_REPLY_MESSAGE_TO_CLIENT")
	}
	// Stored in the reply topic (storeReplyMessageEnable).
	waitDispatched(t, e.b, "DefaultCluster_REPLY_TOPIC", 0, 1)

	// Bad input: no REPLY_TO_CLIENT, an unknown client, a client gone.
	wantCode(t, sendReply(324, props("CORRELATION_ID", "c")), remoting.CodeSystemError)
	resp = sendReply(324, props("REPLY_TO_CLIENT", "ghost"))
	wantCode(t, resp, remoting.CodeSystemError)
	if resp.Remark != "push reply message fail, channel of <ghost> not found." {
		t.Fatalf("remark %q", resp.Remark)
	}
	_ = requester.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not see the requester's connection close")
	}
	resp = e.call(325, []byte("late"), "a", "RG", "b", "DefaultCluster_REPLY_TOPIC", "c", "TBW102", "d", "4",
		"e", "0", "f", "0", "g", "1", "h", "0", "i", replyProps, "j", "0", "k", "false")
	wantCode(t, resp, remoting.CodeSystemError)
	// A refused topic fails the send checks before any push.
	resp = e.call(324, nil, "producerGroup", "RG", "topic", "SCHEDULE_TOPIC_XXXX", "defaultTopic", "TBW102",
		"defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "0", "bornTimestamp", "1", "flag", "0",
		"properties", replyProps)
	wantCode(t, resp, remoting.CodeNoPermission)
}

// A requester whose heartbeat has not arrived yet (the client sends it
// after its first route lookup, racing its first request) still gets the
// reply: the broker pushes it on the connection the request came from,
// found by the request's REPLY_TO_CLIENT client id.
func TestRequestReplyBeforeHeartbeat(t *testing.T) {
	e := newEnv(t)
	pushed := make(chan *remoting.RemotingCommand, 1)
	requester := e.dial(remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		pushed <- req
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	}))
	t.Cleanup(func() { _ = requester.Close() })
	request := props("REPLY_TO_CLIENT", "fresh-1", "CORRELATION_ID", "c-1", "TTL", "30000")
	wantCode(t, call(t, requester, remoting.CodeSendMessage, []byte("ping"), "producerGroup", "PG", "topic", "T",
		"defaultTopic", "TBW102", "defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "0",
		"bornTimestamp", "1", "flag", "0", "properties", request, "reconsumeTimes", "0", "unitMode", "false"),
		remoting.CodeSuccess)

	reply := func() *remoting.RemotingCommand {
		return e.call(324, []byte("pong"), "producerGroup", "RG", "topic", "DefaultCluster_REPLY_TOPIC",
			"defaultTopic", "TBW102", "defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "0",
			"bornTimestamp", "1", "flag", "0", "properties", props("REPLY_TO_CLIENT", "fresh-1", "CORRELATION_ID", "c-1"),
			"reconsumeTimes", "0", "unitMode", "false")
	}
	wantCode(t, reply(), remoting.CodeSuccess)
	select {
	case p := <-pushed:
		if p.Code != 326 || string(p.Body) != "pong" {
			t.Fatalf("pushed code %d body %q", p.Code, p.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no PUSH_REPLY_MESSAGE_TO_CLIENT to the requester")
	}

}
