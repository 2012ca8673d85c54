package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// remotingEchoQueues is the queue count of every topic the remoting echo
// routes: the write queues of the client load's topic.
const remotingEchoQueues = 8

// serveRemotingEcho serves the remoting echo bound on addr until ctx
// ends (raw: serveRawEchoOn), with serve's garbage collector target
// (setServeGC).
func serveRemotingEcho(ctx context.Context, addr string, raw bool) error {
	setServeGC()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--server-remoting-echo-listen %s: %w", addr, err)
	}
	if raw {
		return serveRawEchoOn(ctx, ln)
	}
	return serveRemotingEchoOn(ctx, ln)
}

// serveRemotingEchoOn serves the remoting echo bound on ln until ctx
// ends: the bound, under a RocketMQ 4.x client's own request pattern, of
// what serve spends a message outside the broker. It is name server and
// broker in one, as serve is: GET_ROUTEINFO_BY_TOPIC routes every topic
// to itself as the master of one broker group; a send
// (SEND_MESSAGE, SEND_MESSAGE_V2) is answered SUCCESS with the ext fields
// serve answers (msgId, queueId, queueOffset, MSG_REGION, TRACE_ON) on
// the connection's read goroutine as serve answers an async-flush send,
// and stored nowhere; a heartbeat is answered SUCCESS. Transport, frame
// codec and header decoding are serve's (the remoting package with its
// default Options), so the difference between serve and the echo is the
// broker and the store, and the difference between the echo and another
// server is the transport.
func serveRemotingEchoOn(ctx context.Context, ln net.Listener) error {
	e, err := newRemotingEcho(ln)
	if err != nil {
		return err
	}
	mux := remoting.NewMux()
	mux.RegisterFunc(remoting.CodeGetRouteInfoByTopic, e.route)
	mux.RegisterFunc(remoting.CodeSendMessage, e.send)
	mux.RegisterFunc(remoting.CodeSendMessageV2, e.send)
	mux.RegisterFunc(remoting.CodeHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	})
	rs, err := remoting.NewServer(mux, remoting.Options{Inline: func(req *remoting.RemotingCommand) bool {
		return req.Code == remoting.CodeSendMessage || req.Code == remoting.CodeSendMessageV2
	}})
	if err != nil {
		_ = ln.Close()
		return err
	}
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case <-ctx.Done():
			_ = rs.Close() // Serve returns
		case <-served:
		}
	}()
	if err := rs.Serve(ln); err != nil && ctx.Err() == nil {
		return fmt.Errorf("remoting echo: %w", err)
	}
	return nil
}

// remotingEcho is the state of the remoting echo: its own address (the
// route's broker and the store host of the message ids it makes up), its
// route answer and the offset it counts.
type remotingEcho struct {
	host      netip.AddrPort
	offset    atomic.Int64
	routeBody []byte
}

// newRemotingEcho is the echo serving on ln; on error it closes ln.
func newRemotingEcho(ln net.Listener) (*remotingEcho, error) {
	host, err := netip.ParseAddrPort(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("remoting echo: listener address %q: %w", ln.Addr(), err)
	}
	e := &remotingEcho{host: host}
	if e.routeBody, err = json.Marshal(routeOf(host)); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return e, nil
}

// route answers every topic with remotingEchoQueues queues on the echo
// itself, broker group "echo", master 0.
func (e *remotingEcho) route(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	if topic, _ := req.Ext("topic"); topic == "" {
		return req.NewResponse(remoting.CodeSystemError, "GET_ROUTEINFO_BY_TOPIC without a topic"), nil
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = e.routeBody
	return resp, nil
}

// routeOf is the route of every topic on the echo at host.
func routeOf(host netip.AddrPort) namesrv.TopicRouteData {
	return namesrv.TopicRouteData{
		QueueDatas: []namesrv.QueueData{{BrokerName: "echo", ReadQueueNums: remotingEchoQueues,
			WriteQueueNums: remotingEchoQueues, Perm: 6}},
		BrokerDatas: []namesrv.BrokerData{{Cluster: "EchoCluster", BrokerName: "echo",
			BrokerAddrs: map[string]string{"0": host.String()}}},
	}
}

// send answers a send SUCCESS as serve does, with a message id and a
// queue offset made up from a counter, after checking it names a topic
// and a queue (SEND_MESSAGE_V2 names its fields b and e).
func (e *remotingEcho) send(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	topicKey, queueKey := "topic", "queueId"
	if req.Code == remoting.CodeSendMessageV2 {
		topicKey, queueKey = "b", "e"
	}
	topic, _ := req.Ext(topicKey)
	queue, _ := req.Ext(queueKey)
	if topic == "" || queue == "" {
		return req.NewResponse(remoting.CodeSystemError, "send without a topic or a queue id"), nil
	}
	off := e.offset.Add(1) - 1
	resp := req.NewLeanResponse(remoting.CodeSuccess, "")
	resp.SetExt("msgId", record.OffsetMsgID(e.host, off))
	resp.SetExt("queueId", queue)
	resp.SetExtInt("queueOffset", off)
	resp.SetExt("MSG_REGION", "DefaultRegion")
	resp.SetExt("TRACE_ON", "true")
	return resp, nil
}
