package main

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"

	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// TestRemotingEchoAnswers: the remoting echo and the raw one route a
// topic to themselves, answer each send SUCCESS with a store-host message
// id and an offset of their own, refuse a send without a topic and codes
// they do not serve, and stop when their context ends.
func TestRemotingEchoAnswers(t *testing.T) {
	t.Run("remoting", func(t *testing.T) { testRemotingEcho(t, serveRemotingEchoOn) })
	t.Run("raw", func(t *testing.T) { testRemotingEcho(t, serveRawEchoOn) })
}

func testRemotingEcho(t *testing.T, serve func(context.Context, net.Listener) error) {
	addr, stop := serveEcho(t, serve)
	ctx := context.Background()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(req *remoting.RemotingCommand) *remoting.RemotingCommand {
		t.Helper()
		resp, err := cl.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	route := remoting.NewRequest(remoting.CodeGetRouteInfoByTopic, nil)
	route.SetExt("topic", "TopicLoad")
	resp := invoke(route)
	var rd namesrv.TopicRouteData
	if resp.Code != remoting.CodeSuccess || json.Unmarshal(resp.Body, &rd) != nil ||
		len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != remotingEchoQueues ||
		len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerAddrs["0"] != addr {
		t.Fatalf("route: code %d, body %s", resp.Code, resp.Body)
	}

	for i := range 3 {
		send := remoting.NewRequest(remoting.CodeSendMessageV2, []byte("body"))
		send.SetExt("b", "TopicLoad")
		send.SetExt("e", strconv.Itoa(5+i))
		resp := invoke(send)
		id, _ := resp.Ext("msgId")
		host, off, err := record.ParseOffsetMsgID(id)
		q, _ := resp.Ext("queueId")
		qo, _ := resp.Ext("queueOffset")
		if resp.Code != remoting.CodeSuccess || err != nil || host.String() != addr ||
			off != int64(i) || qo != strconv.Itoa(i) || q != strconv.Itoa(5+i) {
			t.Fatalf("send %d: code %d, msgId %q (%v %d %v), queueId %q, queueOffset %q", i, resp.Code, id, host, off, err, q, qo)
		}
	}
	noTopic := remoting.NewRequest(remoting.CodeSendMessage, []byte("body"))
	noTopic.SetExt("queueId", "0")
	if resp := invoke(noTopic); resp.Code != remoting.CodeSystemError || resp.Remark == "" {
		t.Fatalf("send without a topic: code %d %q, want a system error naming it", resp.Code, resp.Remark)
	}
	if resp := invoke(remoting.NewRequest(remoting.CodeHeartBeat, []byte("{}"))); resp.Code != remoting.CodeSuccess {
		t.Fatalf("heartbeat: code %d", resp.Code)
	}
	if resp := invoke(remoting.NewRequest(remoting.CodePullMessage, nil)); resp.Code != remoting.CodeRequestCodeNotSupported {
		t.Fatalf("pull: code %d, want not supported", resp.Code)
	}
	_ = cl.Close()
	stop()
}
