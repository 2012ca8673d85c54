package server_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// fakeConsumer is a consumer client that answers the broker's calls as
// the RocketMQ clients do, recording them.
type fakeConsumer struct {
	mu    sync.Mutex
	calls map[int32][]*remoting.RemotingCommand
	// reset receives a value for each RESET_CONSUMER_CLIENT_OFFSET (220,
	// one-way, so the broker's answer comes before it arrives).
	reset chan struct{}
}

func (f *fakeConsumer) Handle(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int32][]*remoting.RemotingCommand{}
	}
	f.calls[req.Code] = append(f.calls[req.Code], req)
	f.mu.Unlock()
	switch req.Code {
	case 307:
		resp := req.NewResponse(0, "")
		resp.Body = []byte(`{"properties":{"consumeType":"CONSUME_PASSIVELY"},"subscriptionSet":[],"mqTable":{},"statusTable":{},"jstack":""}`)
		return resp, nil
	case 309:
		resp := req.NewResponse(0, "")
		resp.Body = []byte(`{"order":false,"autoCommit":true,"consumeResult":"CR_SUCCESS","remark":"","spentTimeMills":1}`)
		return resp, nil
	case 221:
		resp := req.NewResponse(0, "")
		resp.Body = []byte(`{"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"` + req.ExtFields["topic"] + `"}:7}}`)
		return resp, nil
	case 220:
		signal(f.reset)
		return nil, nil // one-way
	}
	return req.NewResponse(remoting.CodeRequestCodeNotSupported, ""), nil
}

func (f *fakeConsumer) got(code int32) []*remoting.RemotingCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[code]
}

// adminEnv is an env with topic T (4 queues) holding 3 messages in
// queue 0, 1 in queue 1, group G having consumed 1 of queue 0, and an
// online consumer C1 of G with a producer group PG.
type adminEnv struct {
	*env
	consumer *fakeConsumer
	ccl      *remoting.Client
}

func newAdminEnv(t *testing.T, mod ...func(*broker.Config, *server.Config)) *adminEnv {
	e := newEnv(t, mod...)
	wantCode(t, e.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "T", "readQueueNums", "4", "writeQueueNums", "4", "perm", "6"), 0)
	for i, q := range []int{0, 0, 0, 1} {
		wantCode(t, e.send("T", q, "body-"+strconv.Itoa(i), props("KEYS", "k"+strconv.Itoa(i), "TAGS", "tg")), 0)
	}
	waitDispatched(t, e.b, "T", 0, 3)
	waitDispatched(t, e.b, "T", 1, 1)
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "T", "queueId", "0", "commitOffset", "1"), 0)
	fc := &fakeConsumer{reset: make(chan struct{}, 4)}
	ccl := e.dial(fc)
	t.Cleanup(func() { _ = ccl.Close() })
	body, _ := json.Marshal(map[string]any{
		"clientID":        "C1",
		"producerDataSet": []any{map[string]any{"groupName": "PG"}},
		"consumerDataSet": []any{map[string]any{"groupName": "G", "consumeType": "CONSUME_PASSIVELY",
			"messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
			"subscriptionDataSet": []any{map[string]any{"topic": "T", "subString": "tg || x", "subVersion": 5, "expressionType": "TAG"}}}},
	})
	wantCode(t, call(t, ccl, remoting.CodeHeartBeat, body), 0)
	return &adminEnv{env: e, consumer: fc, ccl: ccl}
}

func decodeBody(t testing.TB, resp *remoting.RemotingCommand, v any) {
	t.Helper()
	if err := admin.Unmarshal(resp.Body, v); err != nil {
		t.Fatalf("decode %s: %v", resp.Body, err)
	}
}

func TestAdminTopicStatsAndConsumeStats(t *testing.T) {
	e := newAdminEnv(t)
	resp := e.call(202, nil, "topic", "T")
	wantCode(t, resp, 0)
	checkShape(t, "TopicStatsTable", resp.Body)
	var ts admin.TopicStatsTable
	decodeBody(t, resp, &ts)
	q0 := ts.OffsetTable[admin.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}]
	if len(ts.OffsetTable) != 4 || q0.MaxOffset != 3 || q0.MinOffset != 0 || q0.LastUpdateTimestamp == 0 {
		t.Fatalf("topic stats %+v", ts)
	}
	wantCode(t, e.call(202, nil, "topic", "Nope"), remoting.CodeTopicNotExist)
	wantCode(t, e.call(202, nil), remoting.CodeSystemError)

	resp = e.call(208, nil, "consumerGroup", "G", "topic", "T")
	wantCode(t, resp, 0)
	checkShape(t, "ConsumeStats", resp.Body)
	var cs admin.ConsumeStats
	decodeBody(t, resp, &cs)
	w := cs.OffsetTable[admin.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}]
	if w.BrokerOffset != 3 || w.ConsumerOffset != 1 || w.LastTimestamp == 0 || cs.Diff() != 3 {
		t.Fatalf("consume stats %+v diff %d", cs, cs.Diff())
	}
	// Without a topic: the group's topics from its offsets.
	resp = e.call(208, nil, "consumerGroup", "G")
	decodeBody(t, resp, &cs)
	if len(cs.OffsetTable) != 4 {
		t.Fatalf("consume stats of all topics: %+v", cs)
	}

	resp = e.call(317, nil)
	wantCode(t, resp, 0)
	checkShape(t, "ConsumeStatsList", resp.Body)
	var csl admin.ConsumeStatsList
	decodeBody(t, resp, &csl)
	if csl.TotalDiff != 3 || csl.BrokerAddr != e.adr {
		t.Fatalf("broker consume stats %+v", csl)
	}

	resp = e.call(303, nil, "topic", "T", "group", "G")
	wantCode(t, resp, 0)
	checkShape(t, "QueryConsumeTimeSpanBody", resp.Body)
	var span admin.QueryConsumeTimeSpanBody
	decodeBody(t, resp, &span)
	if len(span.ConsumeTimeSpanSet) != 4 || span.ConsumeTimeSpanSet[0].MaxTimeStamp == 0 || span.ConsumeTimeSpanSet[0].DelayTime < 0 {
		t.Fatalf("time span %+v", span)
	}
	wantCode(t, e.call(303, nil, "topic", "Nope", "group", "G"), remoting.CodeTopicNotExist)

	resp = e.call(300, nil, "topic", "T")
	wantCode(t, resp, 0)
	checkShape(t, "GroupList", resp.Body)
	var gl admin.GroupList
	decodeBody(t, resp, &gl)
	if strings.Join(gl.GroupList, ",") != "G" {
		t.Fatalf("consume by who %+v", gl)
	}
}

func TestAdminConnections(t *testing.T) {
	closed := make(chan struct{}, 4)
	e := newAdminEnv(t, func(_ *broker.Config, sc *server.Config) {
		// Called after the server forgot the connection's clients.
		sc.Remoting.OnClose = func(*remoting.Conn, error) { signal(closed) }
	})
	resp := e.call(203, nil, "consumerGroup", "G")
	wantCode(t, resp, 0)
	checkShape(t, "ConsumerConnection", resp.Body)
	var cc admin.ConsumerConnection
	decodeBody(t, resp, &cc)
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "C1" || cc.ConsumeType != "CONSUME_PASSIVELY" ||
		cc.SubscriptionTable["T"].SubString != "tg || x" || len(cc.SubscriptionTable["T"].TagsSet) != 2 {
		t.Fatalf("consumer connection %+v", cc)
	}
	wantCode(t, e.call(203, nil, "consumerGroup", "Offline"), 206)

	resp = e.call(204, nil, "producerGroup", "PG")
	wantCode(t, resp, 0)
	checkShape(t, "ProducerConnection", resp.Body)
	var pc admin.ProducerConnection
	decodeBody(t, resp, &pc)
	if len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "C1" || pc.ConnectionSet[0].Language != "JAVA" {
		t.Fatalf("producer connection %+v", pc)
	}
	wantCode(t, e.call(204, nil, "producerGroup", "None"), remoting.CodeSystemError)

	// The producer leaves with its connection.
	_ = e.ccl.Close()
	receive(t, closed, "the client's connection closed")
	wantCode(t, e.call(204, nil, "producerGroup", "PG"), remoting.CodeSystemError)
	wantCode(t, e.call(203, nil, "consumerGroup", "G"), 206)
}

func TestAdminCallsThroughTheClientConnection(t *testing.T) {
	e := newAdminEnv(t)
	// 307: forwarded to C1 with the header, answered with its body.
	resp := e.call(307, nil, "consumerGroup", "G", "clientId", "C1", "jstackEnable", "false")
	wantCode(t, resp, 0)
	if got := e.consumer.got(307); len(got) != 1 || got[0].ExtFields["clientId"] != "C1" || !strings.Contains(string(resp.Body), "CONSUME_PASSIVELY") {
		t.Fatalf("running info: calls %v body %s", got, resp.Body)
	}
	wantCode(t, e.call(307, nil, "consumerGroup", "G", "clientId", "C9"), remoting.CodeSystemError)

	// 309: the message goes to the client as a record.
	send := e.send("T", 2, "direct", props("KEYS", "d"))
	msgID := send.ExtFields["msgId"]
	resp = e.call(309, nil, "consumerGroup", "G", "clientId", "C1", "msgId", msgID)
	wantCode(t, resp, 0)
	got := e.consumer.got(309)
	if len(got) != 1 || got[0].ExtFields["brokerName"] != "broker-a" {
		t.Fatalf("consume directly calls %v", got)
	}
	if msgs, err := admin.DecodeMessages(got[0].Body); err != nil || len(msgs) != 1 || string(msgs[0].Body) != "direct" {
		t.Fatalf("consume directly body: %v %v", msgs, err)
	}
	wantCode(t, e.call(309, nil, "consumerGroup", "G", "clientId", "C1", "msgId", "zz"), remoting.CodeSystemError)

	// 222: RESET_CONSUMER_CLIENT_OFFSET to C1 (fastjson body the Go client
	// parses), the same body in the answer, the broker's offsets moved.
	resp = e.call(222, nil, "topic", "T", "group", "G", "timestamp", "0", "isForce", "true")
	wantCode(t, resp, 0)
	checkShape(t, "ResetOffsetBody", resp.Body)
	var rb admin.ResetOffsetBody
	decodeBody(t, resp, &rb)
	if len(rb.OffsetTable) != 4 || rb.OffsetTable[admin.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}] != 0 {
		t.Fatalf("reset body %+v", rb)
	}
	receive(t, e.consumer.reset, "RESET_CONSUMER_CLIENT_OFFSET at C1")
	if r := e.consumer.got(220)[0]; r.ExtFields["group"] != "G" || !strings.HasPrefix(string(r.Body), `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0`) {
		t.Fatalf("reset request %v %s", r.ExtFields, r.Body)
	}
	resp = e.call(14, nil, "consumerGroup", "G", "topic", "T", "queueId", "0")
	if resp.ExtFields["offset"] != "0" {
		t.Fatalf("offset after reset: %v", resp.ExtFields)
	}
	wantCode(t, e.call(222, nil, "topic", "Nope", "group", "G", "timestamp", "0"), remoting.CodeSystemError)
	wantCode(t, e.call(222, nil, "topic", "T", "group", "G", "timestamp", "x"), remoting.CodeSystemError)

	// 223: each client asked with 221; its table under its id.
	resp = e.call(223, nil, "topic", "T", "group", "G")
	wantCode(t, resp, 0)
	checkShape(t, "GetConsumerStatusBody", resp.Body)
	var st admin.GetConsumerStatusBody
	decodeBody(t, resp, &st)
	if st.ConsumerTable["C1"][admin.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}] != 7 {
		t.Fatalf("consumer status %+v", st)
	}
	wantCode(t, e.call(223, nil, "topic", "T", "group", "Offline"), remoting.CodeSystemError)
}

func TestAdminResetOffsetOfflineGroup(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.send("T", 0, "x", ""), 0)
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "T", "queueId", "0", "commitOffset", "1"), 0)
	resp := e.call(222, nil, "topic", "T", "group", "G", "timestamp", "0", "isForce", "true")
	wantCode(t, resp, 206)
	// Nothing moved.
	if off := e.call(14, nil, "consumerGroup", "G", "topic", "T", "queueId", "0").ExtFields["offset"]; off != "1" {
		t.Fatalf("offset %s after a refused reset", off)
	}
}

func TestAdminConfigTables(t *testing.T) {
	e := newAdminEnv(t)
	resp := e.call(21, nil)
	wantCode(t, resp, 0)
	checkShape(t, "TopicConfigSerializeWrapper", resp.Body)
	var tw admin.TopicConfigSerializeWrapper
	decodeBody(t, resp, &tw)
	if tw.TopicConfigTable["T"].ReadQueueNums != 4 || tw.DataVersion.Counter == 0 {
		t.Fatalf("topic config %+v", tw)
	}

	g := admin.SubscriptionGroupConfig{GroupName: "NG", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 3}
	body, _ := json.Marshal(g)
	wantCode(t, e.call(200, body), 0)
	wantCode(t, e.call(200, []byte(`{"groupName":"bad name"}`)), remoting.CodeSystemError)
	wantCode(t, e.call(200, []byte(`{"groupName":`)), remoting.CodeSystemError)
	resp = e.call(201, nil)
	wantCode(t, resp, 0)
	checkShape(t, "SubscriptionGroupWrapper", resp.Body)
	var gw admin.SubscriptionGroupWrapper
	decodeBody(t, resp, &gw)
	if gw.SubscriptionGroupTable["NG"].RetryMaxTimes != 3 {
		t.Fatalf("groups %+v", gw.SubscriptionGroupTable["NG"])
	}
	if _, ok := gw.SubscriptionGroupTable["bad name"]; ok {
		t.Fatal("an invalid group was created")
	}
	wantCode(t, e.call(207, nil, "groupName", "NG", "removeOffset", "true"), 0)
	gw = admin.SubscriptionGroupWrapper{}
	decodeBody(t, e.call(201, nil), &gw)
	if _, ok := gw.SubscriptionGroupTable["NG"]; ok {
		t.Fatal("group not deleted")
	}

	resp = e.call(43, nil)
	wantCode(t, resp, 0)
	checkShape(t, "ConsumerOffsetSerializeWrapper", resp.Body)
	if !strings.Contains(string(resp.Body), `"T@G":{0:1}`) {
		t.Fatalf("consumer offsets %s", resp.Body)
	}
	resp = e.call(45, nil)
	wantCode(t, resp, 0)
	checkShape(t, "DelayOffsetSerializeWrapper", resp.Body)

	resp = e.call(26, nil)
	wantCode(t, resp, 0)
	if !strings.Contains(string(resp.Body), "brokerName=broker-a\n") || resp.ExtFields["version"] == "" {
		t.Fatalf("broker config %q %v", resp.Body, resp.ExtFields)
	}
	wantCode(t, e.call(25, []byte("brokerPermission=4\n")), remoting.CodeSystemError)
	wantCode(t, e.call(25, nil), 0)
	wantCode(t, e.call(318, []byte("a=b")), remoting.CodeSystemError)
	wantCode(t, e.call(319, nil), 0)
}

func TestAdminRuntimeAndStats(t *testing.T) {
	e := newAdminEnv(t)
	resp := e.call(28, nil)
	wantCode(t, resp, 0)
	checkShape(t, "KVTable", resp.Body)
	var kv admin.KVTable
	decodeBody(t, resp, &kv)
	for _, k := range []string{"brokerVersionDesc", "msgPutTotalTodayNow", "putTps", "commitLogMaxOffset", "runtime", "bootTimestamp"} {
		if kv.Table[k] == "" {
			t.Errorf("runtime info lacks %s: %v", k, kv.Table)
		}
	}
	// The runtime info counts what was put (4 messages in T), and the
	// sampler's series of T appears at its next tick.
	decodeBody(t, e.call(28, nil), &kv)
	if kv.Table["msgPutTotalTodayNow"] != "4" {
		t.Fatalf("msgPutTotalTodayNow %q, want 4", kv.Table["msgPutTotalTodayNow"])
	}
	server.SampleStats(e.s)
	resp = e.call(315, nil, "statsName", "TOPIC_PUT_NUMS", "statsKey", "T")
	wantCode(t, resp, 0)
	checkShape(t, "BrokerStatsData", resp.Body)
	wantCode(t, e.call(315, nil, "statsName", "TOPIC_PUT_NUMS", "statsKey", "Nope"), remoting.CodeSystemError)
}

func TestAdminNameServerCodes(t *testing.T) {
	e := newAdminEnv(t)
	for _, c := range []struct {
		code int32
		kv   []string
		want string
	}{{224, []string{"cluster", "DefaultCluster"}, "T"}, {305, nil, "TBW102"}, {304, nil, "DefaultCluster"}} {
		resp := e.call(c.code, nil, c.kv...)
		wantCode(t, resp, 0)
		checkShape(t, "TopicList", resp.Body)
		var tl admin.TopicList
		decodeBody(t, resp, &tl)
		if !strings.Contains(","+strings.Join(tl.TopicList, ",")+",", ","+c.want+",") {
			t.Errorf("code %d: %v lacks %s", c.code, tl.TopicList, c.want)
		}
	}
	// KV config.
	wantCode(t, e.call(101, nil, "namespace", "ns", "key", "k"), remoting.CodeQueryNotFound)
	wantCode(t, e.call(100, nil, "namespace", "ns", "key", "k", "value", "v"), 0)
	if v := e.call(101, nil, "namespace", "ns", "key", "k").ExtFields["value"]; v != "v" {
		t.Fatalf("kv value %q", v)
	}
	resp := e.call(219, nil, "namespace", "ns")
	wantCode(t, resp, 0)
	checkShape(t, "KVTable", resp.Body)
	wantCode(t, e.call(102, nil, "namespace", "ns", "key", "k"), 0)
	wantCode(t, e.call(219, nil, "namespace", "ns"), remoting.CodeQueryNotFound)
	wantCode(t, e.call(100, nil, "namespace", "ns"), remoting.CodeSystemError)
	wantCode(t, e.call(100, nil, "namespace", "ns", "key", "big", "value", strings.Repeat("x", 70<<10)), remoting.CodeSystemError)
	wantCode(t, e.call(101, nil, "namespace", "ns", "key", "big"), remoting.CodeQueryNotFound)

	// Write permission wiped and given back.
	resp = e.call(205, nil, "brokerName", "broker-a")
	wantCode(t, resp, 0)
	if n, _ := strconv.Atoi(resp.ExtFields["wipeTopicCount"]); n < 1 {
		t.Fatalf("wiped %v", resp.ExtFields)
	}
	wantCode(t, e.send("T", 0, "x", ""), remoting.CodeNoPermission)
	resp = e.call(327, nil, "brokerName", "broker-a")
	if n, _ := strconv.Atoi(resp.ExtFields["addTopicCount"]); n < 1 {
		t.Fatalf("added %v", resp.ExtFields)
	}
	wantCode(t, e.send("T", 0, "x", ""), 0)
	if resp := e.call(205, nil, "brokerName", "other"); resp.ExtFields["wipeTopicCount"] != "0" {
		t.Fatalf("another broker's wipe: %v", resp.ExtFields)
	}

	// Data version.
	resp = e.call(322, []byte(`{"timestamp":1,"counter":1}`), "brokerAddr", e.adr, "brokerName", "broker-a", "clusterName", "DefaultCluster", "brokerId", "0")
	wantCode(t, resp, 0)
	checkShape(t, "DataVersion", resp.Body)
	if resp.ExtFields["changed"] != "true" {
		t.Fatalf("changed %v", resp.ExtFields)
	}
	resp = e.call(322, resp.Body)
	if resp.ExtFields["changed"] != "false" {
		t.Fatalf("same version changed: %v", resp.ExtFields)
	}
}

func TestAdminOffsetsCodes(t *testing.T) {
	e := newAdminEnv(t)
	wantCode(t, e.call(314, nil, "srcGroup", "G", "destGroup", "G2", "topic", "T", "offline", "true"), 0)
	if off := e.call(14, nil, "consumerGroup", "G2", "topic", "T", "queueId", "0").ExtFields["offset"]; off != "1" {
		t.Fatalf("cloned offset %s", off)
	}
	wantCode(t, e.call(15, nil, "consumerGroup", "G3", "topic", "T", "queueId", "0", "commitOffset", "0"), 0)
	resp := e.call(308, nil, "topic", "T", "compareGroup", "G", "filterGroups", "G2")
	wantCode(t, resp, 0)
	checkShape(t, "QueryCorrectionOffsetBody", resp.Body)
	var cb admin.QueryCorrectionOffsetBody
	decodeBody(t, resp, &cb)
	if cb.CorrectionOffsets[0] != 0 {
		t.Fatalf("correction %+v", cb)
	}

	resp = e.call(321, nil, "topic", "T", "queueId", "0", "index", "1", "count", "5", "consumerGroup", "G")
	wantCode(t, resp, 0)
	checkShape(t, "QueryConsumeQueueResponseBody", resp.Body)
	var qb admin.QueryConsumeQueueResponseBody
	decodeBody(t, resp, &qb)
	if len(qb.QueueData) != 2 || qb.MaxQueueIndex != 3 || qb.QueueData[0].PhysicSize == 0 || qb.SubscriptionData == nil {
		t.Fatalf("consume queue %+v", qb)
	}
	resp = e.call(321, nil, "topic", "T", "queueId", "0", "index", "99", "count", "5")
	if resp.Code != 0 || len(resp.Body) != 0 || !strings.Contains(resp.Remark, "is not exist") {
		t.Fatalf("index beyond the queue: %d %q %s", resp.Code, resp.Remark, resp.Body)
	}
	wantCode(t, e.call(321, nil, "topic", "Nope", "queueId", "0", "index", "0", "count", "1"), remoting.CodeSystemError)
}

func TestAdminUnsupportedCodesSayWhy(t *testing.T) {
	e := newEnv(t)
	for _, code := range []int32{13, 211, 212, 214, 217, 218} {
		resp := e.call(code, nil)
		wantCode(t, resp, remoting.CodeRequestCodeNotSupported)
		if !strings.Contains(resp.Remark, "RocketMQ 4.x") {
			t.Errorf("code %d remark %q", code, resp.Remark)
		}
	}
}

var _ = time.Second
