package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
)

// The forms each public 4.x client sends, from their sources:
//   - Java 4.9 (fastjson): enums by name, subVersion a number,
//     classFilterMode, tagsSet, codeSet, expressionType, unitMode.
//   - Go v2 (rocketmq-client-go): as Java, with its own field order.
//   - C++ 2.x core (rocketmq-client-cpp; beneath the Python, PHP and Go v1
//     clients): enums as ordinals, subVersion as a string, no
//     expressionType, codeSet numbers.
//   - C++ 1.x/2.0 core: enums by name, subVersion as a string.
//   - JavaScript (ali-ons): enums by name, no expressionType, no unitMode.
var heartbeatForms = []struct {
	name, body string
	// wanted on success
	model     broker.MessageModel
	enums     [3]string
	subVer    int64
	expr      string
	producers []string
	// wanted on failure: a remark substring
	err string
}{
	{name: "java 4.9", body: `{"clientID":"10.0.0.1@1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"consumeType":"CONSUME_PASSIVELY","groupName":"G","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,` +
		`"codeSet":[65],"expressionType":"TAG","subString":"A","subVersion":1700000000001,"tagsSet":["A"],"topic":"T"}],"unitMode":false}],` +
		`"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"PG"}]}`,
		enums: [3]string{"CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"}, subVer: 1700000000001, expr: "TAG",
		producers: []string{"CLIENT_INNER_PRODUCER", "PG"}},
	{name: "go v2", body: `{"clientID":"10.0.0.1@2","producerDataSet":[],"consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,` +
		`"topic":"T","subString":"A","tagsSet":["A"],"codeSet":[65],"subVersion":1700000000002,"expressionType":"TAG"}],"unitMode":false}]}`,
		model: broker.Broadcasting, enums: [3]string{"CONSUME_PASSIVELY", "BROADCASTING", "CONSUME_FROM_FIRST_OFFSET"}, subVer: 1700000000002, expr: "TAG"},
	{name: "c++ 2.x ordinals", body: `{"clientID":"10.0.0.1@3","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,"groupName":"G",` +
		`"messageModel":1,"subscriptionDataSet":[{"codeSet":[65],"subString":"A","subVersion":"1700000000003","tagsSet":["A"],"topic":"T"}]}],` +
		`"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}` + "\n",
		enums: [3]string{"CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET"}, subVer: 1700000000003, producers: []string{"CLIENT_INNER_PRODUCER"}},
	{name: "c++ broadcasting ordinal", body: `{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"5","consumeType":"0","groupName":"G",` +
		`"messageModel":0,"subscriptionDataSet":[{"subString":"A","subVersion":"7","topic":"T"}]}]}`,
		model: broker.Broadcasting, enums: [3]string{"CONSUME_ACTIVELY", "BROADCASTING", "CONSUME_FROM_TIMESTAMP"}, subVer: 7},
	{name: "c++ 1.x names, string subVersion", body: `{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"consumeType":"CONSUME_PASSIVELY","groupName":"G","messageModel":"CLUSTERING","subscriptionDataSet":[{"codeSet":["65"],` +
		`"subString":"A","subVersion":"1700000000004","tagsSet":["A"],"topic":"T"}]}]}`,
		enums: [3]string{"CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"}, subVer: 1700000000004},
	{name: "javascript ali-ons", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T","subString":"A",` +
		`"classFilterMode":false,"tagsSet":["A"],"codeSet":[65],"subVersion":1700000000005}]}],"producerDataSet":[]}`,
		enums: [3]string{"CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET"}, subVer: 1700000000005},
	{name: "nulls, unknown fields, string booleans, smart-matched key", body: `{"clientId":"c","future":{"x":[1]},"producerDataSet":null,` +
		`"consumerDataSet":[null,{"groupName":"G","consumeType":null,"messageModel":null,"consumeFromWhere":null,"unitMode":"false",` +
		`"subscriptionDataSet":[{"topic":"T","subString":"A","subVersion":1.7e12,"expressionType":null,"tagsSet":null}]}]}`,
		subVer: 1700000000000},
	{name: "ordinal out of range", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","consumeFromWhere":6}]}`,
		err: "consumerDataSet[0].consumeFromWhere = 6: ordinal out of range 0..5"},
	{name: "negative ordinal", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","messageModel":-1}]}`,
		err: "consumerDataSet[0].messageModel = -1: ordinal out of range"},
	{name: "unknown enum name", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_POP"}]}`,
		err: `consumerDataSet[0].consumeType = "CONSUME_POP": not one of`},
	{name: "fractional subVersion", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subVersion":1.5}]}]}`,
		err: "subscriptionDataSet[0].subVersion = 1.5: not an integer"},
	{name: "subVersion not a number", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subVersion":"soon"}]}]}`,
		err: `subVersion = "soon": not a number`},
	{name: "unitMode not a boolean", body: `{"clientID":"c","consumerDataSet":[{"groupName":"G","unitMode":"maybe"}]}`,
		err: `unitMode = "maybe": not a boolean`},
	{name: "no clientID", body: `{"consumerDataSet":[]}`, err: "clientID"},
	{name: "unnamed group", body: `{"clientID":"c","consumerDataSet":[{"subscriptionDataSet":[]}]}`, err: "groupName"},
	{name: "consumerDataSet not an array", body: `{"clientID":"c","consumerDataSet":{"groupName":"G"}}`, err: "consumerDataSet"},
	{name: "not an object", body: `[1,2]`, err: "not a JSON object"},
	{name: "trailing data", body: `{"clientID":"c"} {}`, err: "data after"},
}

func TestHeartbeatForms(t *testing.T) {
	for _, tc := range heartbeatForms {
		t.Run(tc.name, func(t *testing.T) {
			hb, err := parseHeartbeat([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if asFieldError(err) == nil {
					t.Fatalf("err %v is not a field error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(hb.consumers) != 1 {
				t.Fatalf("consumers %+v", hb.consumers)
			}
			cd := hb.consumers[0]
			if cd.GroupName != "G" || cd.MessageModel != tc.model || hb.consumerEnums[0] != tc.enums {
				t.Fatalf("consumer %+v enums %v", cd, hb.consumerEnums[0])
			}
			if len(cd.Subscriptions) != 1 {
				t.Fatalf("subscriptions %+v", cd.Subscriptions)
			}
			sd := cd.Subscriptions[0]
			if sd.Topic != "T" || sd.SubString != "A" || sd.SubVersion != tc.subVer || !reflect.DeepEqual(hb.producers, tc.producers) {
				t.Fatalf("subscription %+v producers %v", sd, hb.producers)
			}
			if !reflect.DeepEqual(sd.TagsSet, []string{"A"}) {
				t.Fatalf("tags %v", sd.TagsSet)
			}
		})
	}
}

// Lock and unlock batch bodies: Java 4.9 adds onlyThisBroker; the Go and
// C++ clients send consumerGroup, clientId and mqSet with numeric queueId.
func TestLockBodyForms(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []int
		err        string
	}{
		{"java 4.9", `{"clientId":"c","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"},{"brokerName":"b","queueId":3,"topic":"T"}],"onlyThisBroker":false}`, []int{0, 3}, ""},
		{"go v2 / c++", `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":2}]}` + "\n", []int{2}, ""},
		{"string queueId, clientID spelling", `{"consumerGroup":"G","clientID":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":"5"}]}`, []int{5}, ""},
		{"null mqSet", `{"consumerGroup":"G","clientId":"c","mqSet":null}`, nil, ""},
		{"queueId out of range", `{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","queueId":4294967296}]}`, nil, "mqSet[0].queueId = 4294967296: out of range for int32"},
		{"no group", `{"clientId":"c","mqSet":[]}`, nil, "consumerGroup or clientId missing"},
		{"onlyThisBroker not a boolean", `{"consumerGroup":"G","clientId":"c","onlyThisBroker":"x"}`, nil, "onlyThisBroker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb, err := parseLockBody([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, mq := range lb.MQSet {
				if mq.Topic != "T" || mq.BrokerName != "b" {
					t.Fatalf("queue %+v", mq)
				}
				got = append(got, mq.QueueID)
			}
			if lb.ConsumerGroup != "G" || lb.ClientID != "c" || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("body %+v", lb)
			}
		})
	}
}

// Register-broker bodies: RegisterBrokerBody of a 4.x broker (fastjson),
// the bare TopicConfigSerializeWrapper of brokers before 3.0.11, and the
// lenient forms fastjson reads.
func TestRegisterBodyForms(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       map[string]config.TopicConfig
		version    config.DataVersion
		err        string
	}{
		{"java 4.9", `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},` +
			`"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}`,
			map[string]config.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
			config.DataVersion{Counter: 3, Timestamp: 1700000000000}, ""},
		{"pre-3.0.11 wrapper, ordinals and strings", `{"dataVersion":{"counter":"4","timestamp":"5"},"topicConfigTable":{"T":{"perm":"7",` +
			`"readQueueNums":"2","writeQueueNums":2,"topicFilterType":1,"order":"true"}}}`,
			map[string]config.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 7, TopicFilterType: "MULTI_TAG", Order: true}},
			config.DataVersion{Counter: 4, Timestamp: 5}, ""},
		{"defaults for absent fields", `{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{},"N":null}}}`,
			map[string]config.TopicConfig{"T": config.NewTopicConfig("T")}, config.DataVersion{}, ""},
		{"empty body", ``, nil, config.DataVersion{}, ""},
		{"topicFilterType out of range", `{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicFilterType":2}}}}`, nil, config.DataVersion{}, "topicFilterType = 2"},
		{"queue count too large", `{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":70000}}}}`, nil, config.DataVersion{}, "queue counts"},
		{"table entry not an object", `{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":3}}}`, nil, config.DataVersion{}, "topicConfigTable.T = 3: not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb, err := parseRegisterBody([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rb.topics, tc.want) || rb.dataVersion != tc.version {
				t.Fatalf("got %+v %+v", rb.topics, rb.dataVersion)
			}
		})
	}
}

// SubscriptionGroupConfig bodies (mqadmin updateSubGroup, the Go admin
// client) and DataVersion bodies.
func TestAdminBodyForms(t *testing.T) {
	g, err := parseSubscriptionGroup([]byte(`{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":false,"consumeFromMinEnable":true,` +
		`"groupName":"G","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}`))
	want := config.NewSubscriptionGroupConfig("G")
	want.ConsumeEnable, want.RetryMaxTimes = false, 3
	if err != nil || g != want {
		t.Fatalf("java form: %+v %v", g, err)
	}
	g, err = parseSubscriptionGroup([]byte(`{"groupName":"G","consumeEnable":"false","retryMaxTimes":"3","brokerId":null,"groupSysFlag":0}`))
	if err != nil || g != want {
		t.Fatalf("lenient form: %+v %v", g, err)
	}
	if _, err := parseSubscriptionGroup([]byte(`{"groupName":"G","retryMaxTimes":"many"}`)); err == nil || !strings.Contains(err.Error(), "retryMaxTimes") {
		t.Fatalf("bad retryMaxTimes: %v", err)
	}
	dv, err := parseDataVersionBody([]byte(`{"counter":"9","timestamp":1700000000000,"stateVersion":0}`))
	if err != nil || dv != (config.DataVersion{Counter: 9, Timestamp: 1700000000000}) {
		t.Fatalf("data version %+v %v", dv, err)
	}
}

func TestLenientScalars(t *testing.T) {
	for _, tc := range []struct {
		in     string
		bits   int
		want   int64
		reason string
	}{
		{`5`, 32, 5, ""}, {`"5"`, 32, 5, ""}, {`" 5 "`, 32, 5, ""}, {`5.0`, 32, 5, ""}, {`"-7"`, 64, -7, ""},
		{`true`, 32, 1, ""}, {`2147483648`, 32, 0, "out of range"}, {`9223372036854775807`, 64, 9223372036854775807, ""},
		{`1e30`, 64, 0, "out of range"}, {`"x"`, 32, 0, "not a number"}, {`[1]`, 32, 0, "not a number"}, {`0.5`, 32, 0, "not an integer"},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(tc.in))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, reason := asInt(v, tc.bits)
		if got != tc.want || !strings.Contains(reason, tc.reason) || (tc.reason == "") != (reason == "") {
			t.Errorf("asInt(%s, %d) = %d, %q", tc.in, tc.bits, got, reason)
		}
	}
	for in, want := range map[any]bool{true: true, "TRUE": true, "1": true, json.Number("0"): false, "false": false} {
		if got, ok := asBool(in); !ok || got != want {
			t.Errorf("asBool(%v) = %v, %v", in, got, ok)
		}
	}
	for _, in := range []any{"yes", json.Number("2"), []any{}} {
		if _, ok := asBool(in); ok {
			t.Errorf("asBool(%v) accepted", in)
		}
	}
}
