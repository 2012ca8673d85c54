package admin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func TestMarshalWritesFastjsonForms(t *testing.T) {
	ts := TopicStatsTable{OffsetTable: MQMap[TopicOffset]{
		{Topic: "T", BrokerName: "b", QueueID: 1}: {MinOffset: 0, MaxOffset: 5, LastUpdateTimestamp: 9},
		{Topic: "T", BrokerName: "b", QueueID: 0}: {MaxOffset: 3},
	}}
	got, err := Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	// Fields in alphabetical order, MessageQueue keys as objects.
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":3,"minOffset":0},` +
		`{"brokerName":"b","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":9,"maxOffset":5,"minOffset":0}}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	got, _ = Marshal(ConsumerOffsetSerializeWrapper{OffsetTable: map[string]map[int32]int64{"T@G": {0: 1, -1: 2}}})
	if string(got) != `{"offsetTable":{"T@G":{-1:2,0:1}}}` {
		t.Fatalf("bare keys: %s", got)
	}
	got, _ = Marshal(ConsumeStats{ConsumeTps: 0})
	if string(got) != `{"consumeTps":0.0}` {
		t.Fatalf("double and null map: %s", got)
	}
}

func TestNormalizeLeavesJSONAndStringsAlone(t *testing.T) {
	for _, s := range []string{`{"a":{"0":1},"b":[{"c":"{x}:1,{"}]}`, `[1,{"k":"v"}]`, `{"s":"a\"{1:2}"}`} {
		n, err := Normalize([]byte(s))
		if err != nil || string(n) != s {
			t.Errorf("%s became %s (%v)", s, n, err)
		}
	}
	for _, s := range []string{`{"a":"`, `{{"topic":"t"`} {
		if _, err := Normalize([]byte(s)); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

// Bodies written by Marshal read back equal through Unmarshal, for any
// queue keys (names with quotes, braces and colons included).
func TestMarshalUnmarshalRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[a-zA-Z0-9_%|:{}"\\ -]{0,12}`)
		body := GetConsumerStatusBody{MessageQueueTable: MQMap[int64]{}, ConsumerTable: map[string]MQMap[int64]{}}
		for range rapid.IntRange(0, 5).Draw(t, "queues") {
			mq := MessageQueue{Topic: name.Draw(t, "topic"), BrokerName: name.Draw(t, "broker"), QueueID: rapid.Int32Range(-1, 1000).Draw(t, "qid")}
			body.MessageQueueTable[mq] = rapid.Int64().Draw(t, "off")
		}
		for range rapid.IntRange(0, 3).Draw(t, "clients") {
			body.ConsumerTable[name.Draw(t, "client")] = body.MessageQueueTable
		}
		b, err := Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		var back GetConsumerStatusBody
		if err := Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(body.MessageQueueTable) == 0 {
			back.MessageQueueTable = MQMap[int64]{}
		}
		for k, v := range back.ConsumerTable {
			if v == nil {
				back.ConsumerTable[k] = MQMap[int64]{}
			}
		}
		if !reflect.DeepEqual(fmt.Sprint(body), fmt.Sprint(back)) && !reflect.DeepEqual(body, back) {
			t.Fatalf("%s\nread back as %+v, want %+v", b, back, body)
		}
	})
}

func TestCMResultReadsNamesAndGoNumbers(t *testing.T) {
	for in, want := range map[string]CMResult{`"CR_LATER"`: "CR_LATER", `0`: "CR_SUCCESS", `1`: "CR_LATER"} {
		var r CMResult
		if err := json.Unmarshal([]byte(in), &r); err != nil || r != want {
			t.Errorf("%s: %q %v", in, r, err)
		}
	}
	var r CMResult
	if err := json.Unmarshal([]byte(`99`), &r); err == nil {
		t.Error("99 accepted")
	}
}

// FuzzUnmarshal: no input makes the fastjson reader panic, and what it
// accepts as a ConsumeStats writes back and reads again the same.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"brokerOffset":3,"consumerOffset":1,"lastTimestamp":0}},"consumeTps":0.0}`))
	f.Add([]byte(`{"offsetTable":{0:1,-1:{"a":[1,{2:3}]}}}`))
	f.Add([]byte(`{"s":"\"{1:2}\\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cs ConsumeStats
		if Unmarshal(b, &cs) != nil {
			return
		}
		out, err := Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		var back ConsumeStats
		if err := Unmarshal(out, &back); err != nil {
			t.Fatalf("%s (from %q): %v", out, b, err)
		}
		if fmt.Sprint(back) != fmt.Sprint(cs) {
			t.Fatalf("%+v became %+v", cs, back)
		}
	})
}
