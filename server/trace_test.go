package server_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestSendResponsesCarryTraceSwitch(t *testing.T) {
	e := newEnv(t)
	resp := e.send("T1", 0, "x", "")
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["MSG_REGION"] != "DefaultRegion" || resp.ExtFields["TRACE_ON"] != "true" {
		t.Fatalf("defaults: %v", resp.ExtFields)
	}
	// Failures carry them too, as in SendMessageProcessor.
	resp = e.send("SCHEDULE_TOPIC_XXXX", 0, "x", "")
	wantCode(t, resp, remoting.CodeNoPermission)
	if resp.ExtFields["TRACE_ON"] != "true" {
		t.Fatalf("refused send: %v", resp.ExtFields)
	}

	off := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.TraceOff, bc.RegionID = true, "R9" })
	resp = off.send("T1", 0, "x", "")
	if resp.ExtFields["MSG_REGION"] != "R9" || resp.ExtFields["TRACE_ON"] != "false" {
		t.Fatalf("traceOn false: %v", resp.ExtFields)
	}
}

func TestTraceTopicAndNotAllowedSendTopics(t *testing.T) {
	e := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.TraceTopicEnable = true })
	tc, ok := e.b.Topics().Get("RMQ_SYS_TRACE_TOPIC")
	if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 {
		t.Fatalf("trace topic: %+v %v", tc, ok)
	}
	if _, ok := e.b.Topics().Get("DefaultCluster_REPLY_TOPIC"); !ok {
		t.Fatal("no reply topic")
	}
	// Traced clients write the trace topic (4.9 allows it) ...
	wantCode(t, e.send("RMQ_SYS_TRACE_TOPIC", 0, "trace", ""), remoting.CodeSuccess)
	// ... but OFFSET_MOVED_EVENT and the transaction topics are refused.
	for _, topic := range []string{"OFFSET_MOVED_EVENT", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
		"SCHEDULE_TOPIC_XXXX", "SELF_TEST_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC"} {
		wantCode(t, e.send(topic, 0, "x", ""), remoting.CodeNoPermission)
	}
	// A custom trace topic name.
	c := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.TraceTopicEnable, bc.MsgTraceTopicName = true, "MyTrace" })
	if _, ok := c.b.Topics().Get("MyTrace"); !ok {
		t.Fatal("no custom trace topic")
	}
	// Without traceTopicEnable there is no trace topic.
	d := newEnv(t)
	if _, ok := d.b.Topics().Get("RMQ_SYS_TRACE_TOPIC"); ok {
		t.Fatal("trace topic without traceTopicEnable")
	}
}

func TestGetEarliestMsgStoretime(t *testing.T) {
	// The store's clock moves 1 ms a reading, so that the two messages
	// have different store times.
	clock := clockstest.NewStepping(time.Now(), time.Millisecond)
	e := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.Store.Clock = clock })
	get := func(topic string, qid int) int64 {
		t.Helper()
		resp := e.call(32, nil, "topic", topic, "queueId", strconv.Itoa(qid))
		wantCode(t, resp, remoting.CodeSuccess)
		v, err := strconv.ParseInt(resp.ExtFields["timestamp"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get("Nope", 0); v != -1 {
		t.Fatalf("unknown queue: %d", v)
	}
	before := clock.FakeClock.Now().UnixMilli()
	wantCode(t, e.send("E", 1, "first", ""), remoting.CodeSuccess)
	wantCode(t, e.send("E", 1, "second", ""), remoting.CodeSuccess)
	waitDispatched(t, e.b, "E", 1, 2)
	m, err := e.b.Store().LookMessageByOffset(0)
	if err != nil {
		t.Fatal(err)
	}
	if v := get("E", 1); v != m.StoreTimestamp || v < before {
		t.Fatalf("earliest %d, first message stored at %d (test began %d)", v, m.StoreTimestamp, before)
	}
	if v := get("E", 0); v != -1 {
		t.Fatalf("empty queue: %d", v)
	}
	wantCode(t, e.call(32, nil, "topic", "E"), remoting.CodeSystemError)
}

func TestFeatureFileConfigKeys(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("brokerClusterName: C7\ntraceOn: false\nmsgRegion: R1\ntraceTopicEnable: true\n" +
		"msgTraceTopicName: MyTrace\nenablePropertyFilter: true\ntransactionTimeOut: 1000\ntransactionCheckMax: 3\n" +
		"transactionCheckInterval: 500\nrejectTransactionMessage: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	bc := nc.Broker
	if !bc.TraceOff || bc.RegionID != "R1" || !bc.TraceTopicEnable || bc.MsgTraceTopicName != "MyTrace" ||
		!bc.EnablePropertyFilter || bc.BrokerClusterName != "C7" {
		t.Fatalf("trace/filter keys: %+v", bc)
	}
	if tr := bc.Transaction; tr.TimeOut != time.Second || tr.CheckMax != 3 || tr.CheckInterval != 500*time.Millisecond || !tr.Reject {
		t.Fatalf("transaction keys: %+v", tr)
	}
	fc, err = server.ParseFileConfig([]byte("regionId: R2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.Apply(&nc); err != nil || nc.Broker.RegionID != "R2" {
		t.Fatalf("regionId: %v %q", err, nc.Broker.RegionID)
	}
	fc, _ = server.ParseFileConfig([]byte("transactionCheckMax: -1\n"))
	if err := fc.Apply(&server.NodeConfig{}); err == nil {
		t.Fatal("negative transactionCheckMax accepted")
	}
}
