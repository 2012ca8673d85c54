package server

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/broker/config"
)

// The fuzz targets of the request bodies: no input panics; a refused
// body is a *fieldError; an accepted body satisfies the decoder's bounds
// and, encoded again as the Java client would, decodes to the same value.
// Run one with: go test ./server -run '^$' -fuzz FuzzHeartbeatBody -fuzztime 1m

func mustFieldError(t *testing.T, err error) {
	t.Helper()
	if asFieldError(err) == nil {
		t.Fatalf("refusal %v is not a field error", err)
	}
}

// javaHeartbeat encodes hb as the Java client does.
func javaHeartbeat(hb *heartbeatData) []byte {
	type sub struct {
		Topic          string `json:"topic"`
		SubString      string `json:"subString"`
		SubVersion     int64  `json:"subVersion"`
		ExpressionType string `json:"expressionType,omitempty"`
	}
	type cons struct {
		GroupName           string `json:"groupName"`
		ConsumeType         string `json:"consumeType,omitempty"`
		MessageModel        string `json:"messageModel,omitempty"`
		ConsumeFromWhere    string `json:"consumeFromWhere,omitempty"`
		UnitMode            bool   `json:"unitMode"`
		SubscriptionDataSet []sub  `json:"subscriptionDataSet"`
	}
	type prod struct {
		GroupName string `json:"groupName"`
	}
	out := struct {
		ClientID        string `json:"clientID"`
		ConsumerDataSet []cons `json:"consumerDataSet"`
		ProducerDataSet []prod `json:"producerDataSet"`
	}{ClientID: hb.clientID}
	for i, cd := range hb.consumers {
		e := hb.consumerEnums[i]
		c := cons{GroupName: cd.GroupName, ConsumeType: e[0], MessageModel: e[1], ConsumeFromWhere: e[2], UnitMode: cd.UnitMode}
		for _, sd := range cd.Subscriptions {
			c.SubscriptionDataSet = append(c.SubscriptionDataSet, sub{sd.Topic, sd.SubString, sd.SubVersion, sd.ExpressionType})
		}
		out.ConsumerDataSet = append(out.ConsumerDataSet, c)
	}
	for _, p := range hb.producers {
		out.ProducerDataSet = append(out.ProducerDataSet, prod{p})
	}
	b, _ := json.Marshal(out)
	return b
}

func FuzzHeartbeatBody(f *testing.F) {
	for _, tc := range heartbeatForms {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := parseHeartbeat(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		subs := 0
		if hb.clientID == "" || len(hb.consumers) != len(hb.consumerEnums) || len(hb.consumers) > maxGroupsPerHeartbeat {
			t.Fatalf("accepted %+v", hb)
		}
		for i, cd := range hb.consumers {
			subs += len(cd.Subscriptions)
			for j, lists := range [][]string{consumeTypes, messageModels, consumeFromWheres} {
				if e := hb.consumerEnums[i][j]; e != "" && !slices.Contains(lists, e) {
					t.Fatalf("enum %q", e)
				}
			}
			if cd.GroupName == "" {
				t.Fatal("unnamed group accepted")
			}
		}
		if subs > maxSubscriptionsPerHeartbeat {
			t.Fatalf("%d subscriptions accepted", subs)
		}
		again, err := parseHeartbeat(javaHeartbeat(hb))
		if err != nil {
			t.Fatalf("re-encoded heartbeat refused: %v", err)
		}
		if !reflect.DeepEqual(again, hb) {
			t.Fatalf("round trip:\n%+v\n%+v", hb, again)
		}
	})
}

func FuzzLockBody(f *testing.F) {
	f.Add([]byte(`{"clientId":"c","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}],"onlyThisBroker":false}`))
	f.Add([]byte(`{"consumerGroup":"G","clientID":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":"5"}]}`))
	f.Add([]byte(`{"consumerGroup":"G","clientId":"c","mqSet":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		lb, err := parseLockBody(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		if lb.ConsumerGroup == "" || lb.ClientID == "" || len(lb.MQSet) > maxLockBatch {
			t.Fatalf("accepted %+v", lb)
		}
		b, _ := json.Marshal(lb)
		again, err := parseLockBody(b)
		if err != nil || !reflect.DeepEqual(again, lb) {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", lb, b, again, err)
		}
	})
}

func FuzzRegisterBody(f *testing.F) {
	f.Add([]byte(`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},` +
		`"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}`))
	f.Add([]byte(`{"dataVersion":{"counter":"4","timestamp":"5"},"topicConfigTable":{"T":{"perm":"7","topicFilterType":1,"order":"true"}}}`))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{},"N":null}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rb, err := parseRegisterBody(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		if rb.topics == nil {
			return
		}
		for _, tc := range rb.topics {
			if err := config.ValidateTopicConfig(tc); err != nil {
				t.Fatalf("accepted %+v: %v", tc, err)
			}
		}
		b, _ := json.Marshal(registerBrokerJSON{TopicConfigSerializeWrapper: topicWrapperJSON{TopicConfigTable: rb.topics, DataVersion: rb.dataVersion}})
		again, err := parseRegisterBody(b)
		if err != nil || !reflect.DeepEqual(again, rb) {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", rb, b, again, err)
		}
	})
}

func FuzzSubscriptionGroupBody(f *testing.F) {
	f.Add([]byte(`{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":false,"groupName":"G","retryMaxTimes":3}`))
	f.Add([]byte(`{"groupName":"G","consumeEnable":"false","retryMaxTimes":"3","brokerId":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := parseSubscriptionGroup(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		b, _ := json.Marshal(g)
		again, err := parseSubscriptionGroup(b)
		if err != nil || again != g {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", g, b, again, err)
		}
	})
}

func FuzzDataVersionBody(f *testing.F) {
	f.Add([]byte(`{"counter":"9","timestamp":1700000000000}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		dv, err := parseDataVersionBody(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		b, _ := json.Marshal(dv)
		again, err := parseDataVersionBody(b)
		if err != nil || again != dv {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", dv, b, again, err)
		}
	})
}

func FuzzCompressedRegisterBody(f *testing.F) {
	var raw bytes.Buffer
	for _, c := range [][]byte{[]byte(`{"counter":7,"timestamp":1}`)} {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(c)))
		raw.Write(c)
	}
	_ = binary.Write(&raw, binary.BigEndian, int32(1))
	line := []byte("T 4 4 6 SINGLE_TAG")
	_ = binary.Write(&raw, binary.BigEndian, int32(len(line)))
	raw.Write(line)
	_ = binary.Write(&raw, binary.BigEndian, int32(2))
	raw.WriteString("[]")
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	f.Add(z.Bytes())
	f.Fuzz(func(t *testing.T, body []byte) {
		rb, err := parseCompressedRegisterBody(body)
		if err != nil {
			mustFieldError(t, err)
			return
		}
		for name, tc := range rb.topics {
			if name != tc.TopicName || config.ValidateTopicConfig(tc) != nil || strings.Contains(name, " ") {
				t.Fatalf("accepted %q: %+v", name, tc)
			}
		}
	})
}
