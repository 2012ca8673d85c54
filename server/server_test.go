package server_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/metrics/prom"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// records decodes a pull or query body.
func records(t testing.TB, b []byte) []*record.MessageExt {
	t.Helper()
	var out []*record.MessageExt
	for len(b) > 0 {
		if len(b) < 36 {
			t.Fatalf("short record: %d bytes", len(b))
		}
		size := int(binary.BigEndian.Uint32(b))
		m, err := record.Decode(b[:size], int64(binary.BigEndian.Uint64(b[28:])), true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		b = b[size:]
	}
	return out
}

func TestRouteInfo(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.call(remoting.CodeGetRouteInfoByTopic, nil, "topic", "Nope"), remoting.CodeTopicNotExist)
	wantCode(t, e.call(remoting.CodeGetRouteInfoByTopic, nil), remoting.CodeSystemError) // no topic field

	for _, topic := range []string{"TBW102", "%RETRY%G1", "%DLQ%G1"} {
		resp := e.call(remoting.CodeGetRouteInfoByTopic, nil, "topic", topic)
		wantCode(t, resp, remoting.CodeSuccess)
		var rd routeJSON
		if err := json.Unmarshal(resp.Body, &rd); err != nil {
			t.Fatal(err)
		}
		if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "broker-a" || len(rd.BrokerDatas) != 1 ||
			rd.BrokerDatas[0].BrokerAddrs["0"] != e.adr || rd.BrokerDatas[0].Cluster != "DefaultCluster" {
			t.Fatalf("%s: route %s", topic, resp.Body)
		}
		if topic == "TBW102" && (rd.QueueDatas[0].Perm != 7 || rd.QueueDatas[0].WriteQueueNums != 8) {
			t.Fatalf("TBW102 route %s", resp.Body)
		}
	}
	// Auto-creation off: no TBW102, and sends to unknown topics fail.
	off := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.DisableAutoCreateTopic = true })
	wantCode(t, off.call(remoting.CodeGetRouteInfoByTopic, nil, "topic", "TBW102"), remoting.CodeTopicNotExist)
	wantCode(t, off.send("Fresh", 0, "x", ""), remoting.CodeTopicNotExist)
}

func TestClusterInfoAndTopicList(t *testing.T) {
	e := newEnv(t)
	resp := e.call(remoting.CodeGetBrokerClusterInfo, nil)
	wantCode(t, resp, remoting.CodeSuccess)
	if !strings.Contains(string(resp.Body), `"clusterAddrTable":{"DefaultCluster":["broker-a"]}`) ||
		!strings.Contains(string(resp.Body), e.adr) {
		t.Fatalf("cluster info %s", resp.Body)
	}
	wantCode(t, e.send("T1", 0, "x", ""), remoting.CodeSuccess)
	resp = e.call(remoting.CodeGetAllTopicListFromNamesrv, nil)
	var tl struct{ TopicList []string }
	if err := json.Unmarshal(resp.Body, &tl); err != nil || !slices.Contains(tl.TopicList, "T1") {
		t.Fatalf("topic list %s %v", resp.Body, err)
	}
}

func TestSendAutoCreatesAndAnswersOffsets(t *testing.T) {
	e := newEnv(t)
	// The first send to an unknown topic creates it from TBW102 with
	// defaultTopicQueueNums (4) queues.
	resp := e.send("Auto", 2, "hello", props("TAGS", "A", "KEYS", "k1", "UNIQ_KEY", "U1"))
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["queueId"] != "2" || resp.ExtFields["queueOffset"] != "0" || len(resp.ExtFields["msgId"]) != 32 {
		t.Fatalf("send response %v", resp.ExtFields)
	}
	tc, ok := e.b.Topics().Get("Auto")
	if !ok || tc.WriteQueueNums != 4 {
		t.Fatalf("auto-created topic %+v %v", tc, ok)
	}
	resp = e.send("Auto", 2, "again", props("TAGS", "B"))
	if resp.ExtFields["queueOffset"] != "1" {
		t.Fatalf("second send %v", resp.ExtFields)
	}
	// Queue id out of range, bad topic names, reserved topics.
	wantCode(t, e.send("Auto", 9, "x", ""), remoting.CodeSystemError)
	wantCode(t, e.send("bad topic!", 0, "x", ""), remoting.CodeSystemError)
	wantCode(t, e.send("TBW102", 0, "x", ""), remoting.CodeSystemError)
	wantCode(t, e.send("SCHEDULE_TOPIC_XXXX", 0, "x", ""), remoting.CodeNoPermission)
	// A half message is accepted (transactions), into RMQ_SYS_TRANS_HALF_TOPIC.
	wantCode(t, e.send("Auto", 0, "x", props("TRAN_MSG", "true", "PGROUP", "PG")), remoting.CodeSuccess)
	// Missing and bad header fields.
	wantCode(t, e.call(remoting.CodeSendMessage, []byte("x"), "topic", "Auto"), remoting.CodeSystemError)
	wantCode(t, e.send("Auto", 0, "x", "", "sysFlag", "zz"), remoting.CodeSystemError)

	waitDispatched(t, e.b, "Auto", 2, 2)
	resp = e.call(remoting.CodeGetMaxOffset, nil, "topic", "Auto", "queueId", "2")
	if resp.ExtFields["offset"] != "2" {
		t.Fatalf("max offset %v", resp.ExtFields)
	}
	resp = e.call(remoting.CodeGetMinOffset, nil, "topic", "Auto", "queueId", "2")
	if resp.ExtFields["offset"] != "0" {
		t.Fatalf("min offset %v", resp.ExtFields)
	}
	wantCode(t, e.call(remoting.CodeGetMaxOffset, nil, "topic", "Auto"), remoting.CodeSystemError)
	// Search by timestamp: before everything → 0, after everything → max.
	resp = e.call(remoting.CodeSearchOffsetByTimestamp, nil, "topic", "Auto", "queueId", "2", "timestamp", "0")
	if resp.ExtFields["offset"] != "0" {
		t.Fatalf("search from 0: %v", resp.ExtFields)
	}
	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	resp = e.call(remoting.CodeSearchOffsetByTimestamp, nil, "topic", "Auto", "queueId", "2", "timestamp", future)
	if resp.ExtFields["offset"] != "2" {
		t.Fatalf("search from the future: %v", resp.ExtFields)
	}
}

// waitDispatched waits until queue topic/qid holds n messages (at most
// 5 s). Each round waits for the CommitLog written so far to be
// dispatched and then, while the queue is short, for the next record, so
// that messages the broker puts later (delayed deliveries, transaction
// commits) are awaited on the dispatcher's progress, not by polling.
func waitDispatched(t testing.TB, b *broker.Broker, topic string, qid int32, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := b.Store()
	for {
		end := st.CommitLog().MaxOffset()
		err := st.WaitDispatched(ctx, end)
		if err == nil && st.MaxOffsetInQueue(topic, qid) >= n {
			return
		}
		if err == nil {
			err = st.WaitDispatched(ctx, end+1)
		}
		if err != nil {
			t.Fatalf("%s/%d has %d messages, want %d: %v", topic, qid, st.MaxOffsetInQueue(topic, qid), n, err)
		}
	}
}

func TestSendV2BatchAndCompressed(t *testing.T) {
	e := newEnv(t)
	v2 := func(code int32, topic string, sysFlag int, body []byte) *remoting.RemotingCommand {
		return e.call(code, body, "a", "PG", "b", topic, "c", "TBW102", "d", "4", "e", "1", "f", strconv.Itoa(sysFlag),
			"g", "1", "h", "0", "i", props("TAGS", "H"), "j", "0", "k", "false", "m", strconv.FormatBool(code == remoting.CodeSendBatchMessage))
	}
	wantCode(t, v2(remoting.CodeSendMessageV2, "V2", 0, []byte("v2 body")), remoting.CodeSuccess)
	// Compressed: stored as is, with the flag.
	wantCode(t, v2(remoting.CodeSendMessageV2, "V2", 1, []byte("zlib bytes")), remoting.CodeSuccess)
	resp := v2(remoting.CodeSendBatchMessage, "V2", 0, batchBody([2]string{"b0", props("TAGS", "X", "UNIQ_KEY", "u0")},
		[2]string{"b1", props("UNIQ_KEY", "u1")}, [2]string{"b2", ""}))
	wantCode(t, resp, remoting.CodeSuccess)
	ids := strings.Split(resp.ExtFields["msgId"], ",")
	if len(ids) != 3 || resp.ExtFields["queueOffset"] != "2" {
		t.Fatalf("batch response %v", resp.ExtFields)
	}
	for i, id := range ids {
		m, err := e.b.Store().LookMessageByMsgID(id)
		if err != nil || string(m.Body) != "b"+strconv.Itoa(i) || m.QueueOffset != int64(2+i) {
			t.Fatalf("batch message %d (%s): %+v %v", i, id, m, err)
		}
		if i == 0 && m.Tags() != "X" || i == 1 && m.Tags() != "H" {
			t.Fatalf("batch message %d tags %q", i, m.Tags())
		}
	}
	waitDispatched(t, e.b, "V2", 1, 5)
	pull := e.call(remoting.CodePullMessage, nil, pullReq("G", "V2", 1, 0, 4, 0)...)
	wantCode(t, pull, remoting.CodeSuccess)
	ms := records(t, pull.Body)
	if len(ms) != 5 || ms[1].SysFlag&1 == 0 || string(ms[1].Body) != "zlib bytes" {
		t.Fatalf("pulled %d, second %+v", len(ms), ms[1])
	}
	// Malformed batches and retry batches are MESSAGE_ILLEGAL.
	bad := batchBody([2]string{"b0", ""})
	binary.BigEndian.PutUint32(bad[16:], 1<<30)
	wantCode(t, v2(remoting.CodeSendBatchMessage, "V2", 0, bad), remoting.CodeMessageIllegal)
	wantCode(t, v2(remoting.CodeSendBatchMessage, "V2", 0, nil), remoting.CodeMessageIllegal)
	wantCode(t, v2(remoting.CodeSendBatchMessage, "%RETRY%G", 0, batchBody([2]string{"b", ""})), remoting.CodeMessageIllegal)
	// A batch cannot be delayed.
	wantCode(t, v2(remoting.CodeSendBatchMessage, "V2", 0, batchBody([2]string{"b", props("DELAY", "1")})), remoting.CodeMessageIllegal)
}

func TestSendToRetryTopicDivertsToDLQ(t *testing.T) {
	e := newEnv(t)
	resp := e.send("%RETRY%G", 0, "r", props("TAGS", "A"), "reconsumeTimes", "1", "maxReconsumeTimes", "3")
	wantCode(t, resp, remoting.CodeSuccess)
	if _, ok := e.b.Topics().Get("%DLQ%G"); ok {
		t.Fatal("DLQ created for a retry below the maximum")
	}
	resp = e.send("%RETRY%G", 0, "dead", props("TAGS", "A", "DELAY", "2"), "reconsumeTimes", "3", "maxReconsumeTimes", "3")
	wantCode(t, resp, remoting.CodeSuccess)
	waitDispatched(t, e.b, "%DLQ%G", 0, 1)
	m, err := e.b.Store().LookMessageByMsgID(resp.ExtFields["msgId"])
	if err != nil || m.Topic != "%DLQ%G" || string(m.Body) != "dead" || m.Properties["DELAY"] != "" {
		t.Fatalf("DLQ message %+v %v", m, err)
	}
}

func TestDelayedSend(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	wantCode(t, e.send("Later", 0, "x", props("DELAY", "3")), remoting.CodeSuccess)
	waitDispatched(t, e.b, "Later", 0, 1)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("delivered after %v, before level 3 (60 ms)", d)
	}
}

func TestHeartbeatConsumerListNotifyAndExpiry(t *testing.T) {
	clock := newFakeClock()
	closed := make(chan struct{}, 8)
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.ChannelExpiry, sc.Clock = time.Second, clock
		// Called after the server forgot the connection's clients.
		sc.Remoting.OnClose = func(*remoting.Conn, error) { signal(closed) }
	})
	notified := make(chan struct{}, 8)
	h := remoting.NewMux()
	h.RegisterFunc(remoting.CodeNotifyConsumerIDsChanged, func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if req.ExtFields["consumerGroup"] == "G" {
			signal(notified)
		}
		return nil, nil
	})
	c1 := e.dial(h)
	defer c1.Close()
	wantCode(t, e.heartbeat(c1, "ip@1", "G", map[string]string{"T": "*"}), remoting.CodeSuccess)
	wantCode(t, e.call(remoting.CodeGetConsumerListByGroup, nil, "consumerGroup", "Nobody"), remoting.CodeSystemError)
	c2 := e.dial(nil)
	wantCode(t, e.heartbeat(c2, "ip@2", "G", map[string]string{"T": "A || B"}), remoting.CodeSuccess)
	resp := e.call(remoting.CodeGetConsumerListByGroup, nil, "consumerGroup", "G")
	if string(resp.Body) != `{"consumerIdList":["ip@1","ip@2"]}` {
		t.Fatalf("consumer list %s", resp.Body)
	}
	if _, ok := e.b.Topics().Get("%RETRY%G"); !ok {
		t.Fatal("the heartbeat did not create the retry topic")
	}
	// c2's connection closes: it leaves, c1 is notified.
	_ = c2.Close()
	receive(t, closed, "c2's connection closed")
	if ids := e.s.ConsumerIDs("G"); len(ids) != 1 {
		t.Fatalf("after c2 closed: %v", ids)
	}
	receive(t, notified, "c1 notified that c2 joined")
	receive(t, notified, "c1 notified that c2 left")
	// c1 stops sending heartbeats: it expires and its connection closes.
	clock.Advance(2 * time.Second)
	server.Housekeep(e.s)
	if ids := e.s.ConsumerIDs("G"); len(ids) != 0 {
		t.Fatalf("after c1's expiry: %v", ids)
	}
	select {
	case <-c1.Conn().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the expired client's connection is still open")
	}
	// Bad bodies.
	wantCode(t, e.call(remoting.CodeHeartBeat, []byte("{")), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeHeartBeat, []byte(`{"clientID":""}`)), remoting.CodeSystemError)
	// UNREGISTER_CLIENT.
	c3 := e.dial(nil)
	defer c3.Close()
	wantCode(t, e.heartbeat(c3, "ip@3", "G", map[string]string{"T": "*"}), remoting.CodeSuccess)
	wantCode(t, e.call(remoting.CodeUnregisterClient, nil, "clientID", "ip@3", "consumerGroup", "G"), remoting.CodeSuccess)
	if ids := e.s.ConsumerIDs("G"); len(ids) != 0 {
		t.Fatalf("after unregister: %v", ids)
	}
	wantCode(t, e.call(remoting.CodeUnregisterClient, nil), remoting.CodeSystemError)
}

// waitHeld waits until the broker holds n pulls (at most 5 s).
func waitHeld(t testing.TB, b *broker.Broker, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.WaitHeldPulls(ctx, n); err != nil {
		t.Fatalf("%d pulls held, want %d: %v", b.HeldPulls(), n, err)
	}
}

// signal sends on ch without blocking (a full buffer already signals).
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// receive waits for one value on ch (at most 5 s).
func receive(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestConsumerOffsets(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.send("O", 0, "x", ""), remoting.CodeSuccess)
	waitDispatched(t, e.b, "O", 0, 1)
	// A young queue: no committed offset, but offset 0 is in memory.
	resp := e.call(remoting.CodeQueryConsumerOffset, nil, "consumerGroup", "G", "topic", "O", "queueId", "0")
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["offset"] != "0" {
		t.Fatalf("query %v", resp.ExtFields)
	}
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "O", "queueId", "0", "commitOffset", "1"), remoting.CodeSuccess)
	// -1 (what the Go client commits for unconsumed queues) is ignored.
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "O", "queueId", "0", "commitOffset", "-1"), remoting.CodeSuccess)
	resp = e.call(remoting.CodeQueryConsumerOffset, nil, "consumerGroup", "G", "topic", "O", "queueId", "0")
	if resp.ExtFields["offset"] != "1" {
		t.Fatalf("query after commit %v", resp.ExtFields)
	}
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "O"), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeQueryConsumerOffset, nil, "consumerGroup", "G", "topic", "O", "queueId", "x"), remoting.CodeSystemError)
}

func TestPullFoundHeldAndWoken(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.heartbeat(e.cl, "ip@1", "G", map[string]string{"P": "A"}), remoting.CodeSuccess)
	wantCode(t, e.send("P", 0, "a0", props("TAGS", "A")), remoting.CodeSuccess)
	wantCode(t, e.send("P", 0, "b1", props("TAGS", "B")), remoting.CodeSuccess)
	waitDispatched(t, e.b, "P", 0, 2)
	// The heartbeat's subscription (tag A) filters when the request has none.
	resp := e.call(remoting.CodePullMessage, nil, pullReq("G", "P", 0, 0, 0, 0)...)
	wantCode(t, resp, remoting.CodeSuccess)
	ms := records(t, resp.Body)
	if len(ms) != 1 || string(ms[0].Body) != "a0" || resp.ExtFields["nextBeginOffset"] != "2" ||
		resp.ExtFields["maxOffset"] != "2" || resp.ExtFields["minOffset"] != "0" || resp.ExtFields["suggestWhichBrokerId"] != "0" {
		t.Fatalf("pull %v %d", resp.ExtFields, len(ms))
	}
	// Held (suspend flag 2) until a message arrives.
	got := make(chan *remoting.RemotingCommand, 1)
	go func() {
		got <- call(t, e.cl, remoting.CodePullMessage, nil, pullReq("G", "P", 0, 2, 2|4, 10000)...)
	}()
	waitHeld(t, e.b, 1)
	wantCode(t, e.send("P", 0, "a2", props("TAGS", "A")), remoting.CodeSuccess)
	select {
	case resp = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the held pull was not woken")
	}
	wantCode(t, resp, remoting.CodeSuccess)
	if ms := records(t, resp.Body); len(ms) != 1 || string(ms[0].Body) != "a2" {
		t.Fatalf("woken pull: %d records", len(ms))
	}
	// A short hold times out with PULL_NOT_FOUND.
	resp = e.call(remoting.CodePullMessage, nil, pullReq("G", "P", 0, 3, 2|4, 50)...)
	wantCode(t, resp, remoting.CodePullNotFound)
	// Errors: no subscription, unknown topic, bad queue, bad fields.
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("G2", "P", 0, 0, 0, 0)...), remoting.CodeSubscriptionNotExist)
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("G", "Nope", 0, 0, 4, 0)...), remoting.CodeTopicNotExist)
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("G", "P", 99, 0, 4, 0)...), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodePullMessage, nil, "topic", "P"), remoting.CodeSystemError)
	// maxMsgNums <= 0 returns one message, as RocketMQ 4.9 does.
	for _, n := range []string{"0", "-5"} {
		one := pullReq("G", "P", 0, 0, 4, 0)
		one[9] = n
		resp := e.call(remoting.CodePullMessage, nil, one...)
		wantCode(t, resp, remoting.CodeSuccess)
		if ms := records(t, resp.Body); len(ms) != 1 {
			t.Fatalf("maxMsgNums %s: %d records, want 1", n, len(ms))
		}
	}
	// Offset far past the end: moved.
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("G", "P", 0, 100, 4, 0)...), remoting.CodePullOffsetMoved)
}

func TestShutdownAnswersHeldPulls(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.send("S", 0, "x", ""), remoting.CodeSuccess)
	waitDispatched(t, e.b, "S", 0, 1)
	const n = 20
	got := make(chan *remoting.RemotingCommand, n)
	for range n {
		go func() {
			req := remoting.NewRequest(remoting.CodePullMessage, nil)
			kv := pullReq("G", "S", 0, 1, 2|4, 30000)
			for i := 0; i+1 < len(kv); i += 2 {
				req.SetExt(kv[i], kv[i+1])
			}
			resp, err := e.cl.Invoke(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			got <- resp
		}()
	}
	waitHeld(t, e.b, n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		resp := <-got
		if resp == nil || resp.Code != remoting.CodeSystemBusy || resp.ExtFields["nextBeginOffset"] != "1" {
			t.Fatalf("held pull answered %v", resp)
		}
	}
}

func TestHeldPullsPerConnectionAreBounded(t *testing.T) {
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.MaxHeldPullsPerConn = 2 })
	wantCode(t, e.send("B", 0, "x", ""), remoting.CodeSuccess)
	waitDispatched(t, e.b, "B", 0, 1)
	for range 2 {
		req := remoting.NewRequest(remoting.CodePullMessage, nil)
		kv := pullReq("G", "B", 0, 1, 2|4, 30000)
		for i := 0; i+1 < len(kv); i += 2 {
			req.SetExt(kv[i], kv[i+1])
		}
		if err := e.cl.InvokeOneway(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	waitHeld(t, e.b, 2)
	start := time.Now()
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("G", "B", 0, 1, 2|4, 30000)...), remoting.CodePullNotFound)
	if time.Since(start) > time.Second {
		t.Fatal("the third pull was held")
	}
}

func TestSendBackRetryAndDLQ(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.heartbeat(e.cl, "ip@1", "G", map[string]string{"T": "*"}), remoting.CodeSuccess)
	resp := e.send("T", 0, "payload", props("TAGS", "A"))
	_, off, err := record.ParseOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	back := func(off int64, level string) *remoting.RemotingCommand {
		return e.call(remoting.CodeConsumerSendMsgBack, nil, "group", "G", "offset", strconv.FormatInt(off, 10),
			"delayLevel", level, "originMsgId", "x", "originTopic", "T", "unitMode", "false", "maxReconsumeTimes", "1")
	}
	wantCode(t, back(off, "1"), remoting.CodeSuccess)
	waitDispatched(t, e.b, "%RETRY%G", 0, 1)
	pull := e.call(remoting.CodePullMessage, nil, pullReq("G", "%RETRY%G", 0, 0, 4, 0)...)
	ms := records(t, pull.Body)
	if len(ms) != 1 || ms[0].ReconsumeTimes != 1 || ms[0].Properties["RETRY_TOPIC"] != "T" {
		t.Fatalf("retry message %+v", ms)
	}
	// Reconsumed once with max 1: the next send-back goes to the DLQ.
	wantCode(t, back(ms[0].CommitLogOffset, "0"), remoting.CodeSuccess)
	waitDispatched(t, e.b, "%DLQ%G", 0, 1)
	wantCode(t, back(1<<40, "0"), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeConsumerSendMsgBack, nil, "group", "G"), remoting.CodeSystemError)
}

func TestQueryAndViewMessage(t *testing.T) {
	e := newEnv(t)
	resp := e.send("Q", 0, "find me", props("KEYS", "order-1", "UNIQ_KEY", "UQ1"))
	id := resp.ExtFields["msgId"]
	waitDispatched(t, e.b, "Q", 0, 1)
	_, off, _ := record.ParseOffsetMsgID(id)
	v := e.call(remoting.CodeViewMessageByID, nil, "offset", strconv.FormatInt(off, 10))
	wantCode(t, v, remoting.CodeSuccess)
	if ms := records(t, v.Body); len(ms) != 1 || string(ms[0].Body) != "find me" {
		t.Fatalf("view %+v", ms)
	}
	wantCode(t, e.call(remoting.CodeViewMessageByID, nil, "offset", "123456789"), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeViewMessageByID, nil, "offset", "-3"), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeViewMessageByID, nil, "offset", "7"), remoting.CodeSystemError)
	end := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	// The index is a dispatcher of the same pass: dispatched is indexed.
	q := e.call(remoting.CodeQueryMessage, nil, "topic", "Q", "key", "order-1", "maxNum", "32", "beginTimestamp", "0", "endTimestamp", end)
	wantCode(t, q, remoting.CodeSuccess)
	if ms := records(t, q.Body); len(ms) != 1 || string(ms[0].Body) != "find me" || q.ExtFields["indexLastUpdateTimestamp"] == "" {
		t.Fatalf("query %v %d", q.ExtFields, len(ms))
	}
	wantCode(t, e.call(remoting.CodeQueryMessage, nil, "topic", "Q", "key", "nope", "maxNum", "32", "beginTimestamp", "0", "endTimestamp", end), remoting.CodeQueryNotFound)
	wantCode(t, e.call(remoting.CodeQueryMessage, nil, "topic", "Q"), remoting.CodeSystemError)
}

func TestLockBatch(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.LockExpiry, sc.Clock = 500*time.Millisecond, clock })
	body := func(client string, qids ...int) []byte {
		var mqs []map[string]any
		for _, q := range qids {
			mqs = append(mqs, map[string]any{"topic": "T", "brokerName": "broker-a", "queueId": q})
		}
		b, _ := json.Marshal(map[string]any{"consumerGroup": "G", "clientId": client, "mqSet": mqs})
		return b
	}
	locked := func(resp *remoting.RemotingCommand) []int {
		var r struct {
			LockOKMQSet []struct {
				QueueID int `json:"queueId"`
			} `json:"lockOKMQSet"`
		}
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, mq := range r.LockOKMQSet {
			out = append(out, mq.QueueID)
		}
		slices.Sort(out)
		return out
	}
	if got := locked(e.call(remoting.CodeLockBatchMQ, body("c1", 0, 1))); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("c1 locked %v", got)
	}
	if got := locked(e.call(remoting.CodeLockBatchMQ, body("c2", 1, 2))); !slices.Equal(got, []int{2}) {
		t.Fatalf("c2 locked %v", got)
	}
	wantCode(t, e.call(remoting.CodeUnlockBatchMQ, body("c1", 1)), remoting.CodeSuccess)
	if got := locked(e.call(remoting.CodeLockBatchMQ, body("c2", 1))); !slices.Equal(got, []int{1}) {
		t.Fatalf("c2 after unlock %v", got)
	}
	// c1's lock on 0 expires without renewal.
	clock.Advance(600 * time.Millisecond)
	if got := locked(e.call(remoting.CodeLockBatchMQ, body("c2", 0))); !slices.Equal(got, []int{0}) {
		t.Fatalf("c2 after expiry %v", got)
	}
	wantCode(t, e.call(remoting.CodeLockBatchMQ, []byte("nope")), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeUnlockBatchMQ, []byte(`{"consumerGroup":""}`)), remoting.CodeSystemError)
}

func TestAdminTopics(t *testing.T) {
	e := newEnv(t)
	create := func(topic string, extra ...string) *remoting.RemotingCommand {
		return e.call(remoting.CodeUpdateAndCreateTopic, nil, append([]string{"topic", topic, "defaultTopic", "x",
			"readQueueNums", "3", "writeQueueNums", "3", "perm", "6", "topicFilterType", "SINGLE_TAG", "topicSysFlag", "0", "order", "false"}, extra...)...)
	}
	wantCode(t, create("Made"), remoting.CodeSuccess)
	if tc, ok := e.b.Topics().Get("Made"); !ok || tc.ReadQueueNums != 3 {
		t.Fatalf("created %+v", tc)
	}
	wantCode(t, create("TBW102"), remoting.CodeSystemError)
	wantCode(t, create("bad name"), remoting.CodeSystemError)
	wantCode(t, create("Made", "perm", "x"), remoting.CodeSystemError)
	wantCode(t, e.call(remoting.CodeDeleteTopicInBroker, nil, "topic", "Made"), remoting.CodeSuccess)
	wantCode(t, e.call(remoting.CodeDeleteTopicInNamesrv, nil, "topic", "Made"), remoting.CodeSuccess)
	if _, ok := e.b.Topics().Get("Made"); ok {
		t.Fatal("not deleted")
	}
	wantCode(t, e.call(remoting.CodeGetRouteInfoByTopic, nil, "topic", "Made"), remoting.CodeTopicNotExist)
	wantCode(t, e.call(remoting.CodeDeleteTopicInBroker, nil), remoting.CodeSystemError)
}

func TestUnsupportedCodes(t *testing.T) {
	e := newEnv(t)
	for _, code := range []int32{9999, 13, 212} {
		wantCode(t, e.call(code, nil), remoting.CodeRequestCodeNotSupported)
	}
}

func TestMetrics(t *testing.T) {
	m := prom.New(t.TempDir())
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.Metrics = m })
	wantCode(t, e.send("M", 0, "x", ""), remoting.CodeSuccess)
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	for _, n := range []string{"rocketstore_put_messages_total", "rocketstore_put_latency_seconds", "rocketstore_held_pulls",
		"rocketstore_dispatch_lag_bytes", "rocketstore_flush_lag_bytes", "rocketstore_disk_used_bytes", "rocketstore_requests_total",
		"rocketstore_page_release_errors_total"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
}

func TestFileConfig(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("brokerName: b1\nbrokerClusterName: C\nflushDiskType: SYNC_FLUSH\n" +
		"mapedFileSizeCommitLog: 1048576\nmessageDelayLevel: \"100ms 1s\"\nautoCreateTopicEnable: false\nlistenPort: 10911\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if nc.Server.BrokerName != "b1" || nc.Server.ClusterName != "C" || nc.Broker.Store.CommitLogFileSize != 1<<20 ||
		len(nc.Broker.Store.DelayLevels) != 2 || !nc.Broker.DisableAutoCreateTopic || nc.BrokerListen != "127.0.0.1:10911" ||
		nc.Broker.Store.FlushDiskType.String() != "SYNC_FLUSH" {
		t.Fatalf("applied %+v", nc)
	}
	fc, err = server.ParseFileConfig([]byte("maxHashSlotNum: 5000\nmaxIndexNum: 20000\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.Apply(&nc); err != nil || nc.Broker.Index.MaxHashSlotNum != 5000 || nc.Broker.Index.MaxIndexNum != 20000 {
		t.Fatalf("index geometry %+v (%v)", nc.Broker.Index, err)
	}
	fc, _ = server.ParseFileConfig([]byte("maxIndexNum: 1\n"))
	if err := fc.Apply(&server.NodeConfig{}); err == nil || !strings.Contains(err.Error(), "maxIndexNum 1") {
		t.Fatalf("maxIndexNum 1: %v", err)
	}
	if _, err := server.ParseFileConfig([]byte("brokerNmae: typo\n")); err == nil {
		t.Fatal("unknown key accepted")
	}
	fc, _ = server.ParseFileConfig([]byte("flushDiskType: SOMETIMES\n"))
	if err := fc.Apply(&server.NodeConfig{}); err == nil {
		t.Fatal("bad flushDiskType accepted")
	}
}
