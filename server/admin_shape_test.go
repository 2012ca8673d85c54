package server_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/admin"
)

// javaShapes are the JSON shapes of RocketMQ 4.9.4's admin bodies, written
// from the Java classes' fields (org.apache.rocketmq.common.admin.*,
// common.protocol.body.*, common.protocol.route.*, common.TopicConfig,
// common.subscription.SubscriptionGroupConfig, common.DataVersion,
// heartbeat.SubscriptionData): field names and JSON types, with fastjson's
// map key forms. Conventions: {"*": v} is a map with any string keys and
// values shaped v; {"{mq}": v} a map keyed by MessageQueue objects
// ({"brokerName","queueId","topic"}); {"#": v} a map with bare integer
// keys; a field name ending in "?" may be absent (a Java null, which
// fastjson leaves out). 0 stands for a number, "" a string, true a boolean.
var javaShapes = map[string]string{
	"TopicStatsTable":  `{"offsetTable":{"{mq}":{"minOffset":0,"maxOffset":0,"lastUpdateTimestamp":0}}}`,
	"ConsumeStats":     `{"offsetTable":{"{mq}":{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}},"consumeTps":0}`,
	"ConsumeStatsList": `{"consumeStatsList":[{"*":[{"offsetTable":{"{mq}":{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}},"consumeTps":0}]}],"brokerAddr":"","totalDiff":0}`,
	"ConsumerConnection": `{"connectionSet":[{"clientId":"","clientAddr":"","language":"","version":0}],` +
		`"subscriptionTable":{"*":{"classFilterMode":true,"topic":"","subString":"","tagsSet":[""],"codeSet":[0],"subVersion":0,"expressionType":""}},` +
		`"consumeType":"","messageModel":"","consumeFromWhere":""}`,
	"ProducerConnection":       `{"connectionSet":[{"clientId":"","clientAddr":"","language":"","version":0}]}`,
	"KVTable":                  `{"table":{"*":""}}`,
	"GroupList":                `{"groupList":[""]}`,
	"TopicList":                `{"topicList":[""],"brokerAddr?":""}`,
	"QueryConsumeTimeSpanBody": `{"consumeTimeSpanSet":[{"messageQueue":{"topic":"","brokerName":"","queueId":0},"minTimeStamp":0,"maxTimeStamp":0,"consumeTimeStamp":0,"delayTime":0}]}`,
	"BrokerStatsData":          `{"statsMinute":{"sum":0,"tps":0,"avgpt":0},"statsHour":{"sum":0,"tps":0,"avgpt":0},"statsDay":{"sum":0,"tps":0,"avgpt":0}}`,
	"QueryConsumeQueueResponseBody": `{"subscriptionData?":{"classFilterMode":true,"topic":"","subString":"","tagsSet":[""],"codeSet":[0],"subVersion":0,"expressionType":""},` +
		`"filterData?":"","queueData":[{"physicOffset":0,"physicSize":0,"tagsCode":0,"extendDataJson?":"","bitMap?":"","eval":true,"msg?":""}],"maxQueueIndex":0,"minQueueIndex":0}`,
	"QueryCorrectionOffsetBody":      `{"correctionOffsets":{"#":0}}`,
	"ResetOffsetBody":                `{"offsetTable":{"{mq}":0}}`,
	"GetConsumerStatusBody":          `{"messageQueueTable":{"{mq}":0},"consumerTable":{"*":{"{mq}":0}}}`,
	"TopicConfigSerializeWrapper":    `{"topicConfigTable":{"*":{"topicName":"","readQueueNums":0,"writeQueueNums":0,"perm":0,"topicFilterType":"","topicSysFlag":0,"order":true}},"dataVersion":{"timestamp":0,"counter":0}}`,
	"SubscriptionGroupWrapper":       `{"subscriptionGroupTable":{"*":{"groupName":"","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":0,"retryMaxTimes":0,"brokerId":0,"whichBrokerWhenConsumeSlowly":0,"notifyConsumerIdsChangedEnable":true}},"dataVersion":{"timestamp":0,"counter":0}}`,
	"ConsumerOffsetSerializeWrapper": `{"offsetTable":{"*":{"#":0}}}`,
	"DelayOffsetSerializeWrapper":    `{"offsetTable":{"#":0}}`,
	"DataVersion":                    `{"timestamp":0,"counter":0}`,
}

// checkShape fails t unless body (fastjson) has the Java class's shape.
func checkShape(t testing.TB, class string, body []byte) {
	t.Helper()
	var want any
	if err := json.Unmarshal([]byte(javaShapes[class]), &want); err != nil {
		t.Fatalf("shape %s: %v", class, err)
	}
	raw, err := rawKeys(body)
	if err != nil {
		t.Fatalf("%s: body %q: %v", class, body, err)
	}
	if errs := shapeDiff(class, raw, want); len(errs) > 0 {
		t.Fatalf("%s body differs from RocketMQ 4.9's:\n%s\nbody: %s", class, strings.Join(errs, "\n"), body)
	}
}

// keyed is a decoded object that remembers how each key was written.
type keyed struct {
	vals  map[string]any
	kinds map[string]byte // '"' string key, '#' bare integer, '{' object
}

// rawKeys decodes fastjson, recording each key's form.
func rawKeys(b []byte) (any, error) {
	n, err := admin.Normalize(b)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(n, &v); err != nil {
		return nil, err
	}
	// Normalize quotes bare and object keys; recover their forms by
	// scanning the original for each object's keys in order would be
	// complex, so classify by content: a key that parses as an object
	// was an object, a key of digits was bare unless the original has it
	// quoted.
	return annotate(v, string(b)), nil
}

func annotate(v any, orig string) any {
	switch x := v.(type) {
	case map[string]any:
		k := keyed{vals: map[string]any{}, kinds: map[string]byte{}}
		for key, val := range x {
			k.vals[key] = annotate(val, orig)
			switch {
			case strings.HasPrefix(key, "{"):
				k.kinds[key] = '{'
			case isInt(key) && !strings.Contains(orig, `"`+key+`":`):
				k.kinds[key] = '#'
			default:
				k.kinds[key] = '"'
			}
		}
		return k
	case []any:
		for i := range x {
			x[i] = annotate(x[i], orig)
		}
		return x
	}
	return v
}

func isInt(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c >= '0' && c <= '9' || (i == 0 && c == '-')) {
			return false
		}
	}
	return true
}

func shapeDiff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(keyed)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want an object", path, got)}
		}
		if len(w) == 1 {
			for special, vw := range w {
				var form byte
				switch special {
				case "*":
					form = '"'
				case "#":
					form = '#'
				case "{mq}":
					form = '{'
				}
				if form != 0 {
					var errs []string
					for k, v := range g.vals {
						if g.kinds[k] != form {
							errs = append(errs, fmt.Sprintf("%s: key %s written as %q, want %q", path, k, g.kinds[k], form))
						}
						if form == '{' {
							var mq map[string]any
							if err := json.Unmarshal([]byte(k), &mq); err != nil || len(mq) != 3 || mq["topic"] == nil || mq["brokerName"] == nil || mq["queueId"] == nil {
								errs = append(errs, fmt.Sprintf("%s: key %s is not a MessageQueue", path, k))
							}
						}
						errs = append(errs, shapeDiff(path+"["+k+"]", v, vw)...)
					}
					return errs
				}
			}
		}
		var errs []string
		for name, vw := range w {
			opt := strings.HasSuffix(name, "?")
			name = strings.TrimSuffix(name, "?")
			v, ok := g.vals[name]
			if !ok {
				if !opt {
					errs = append(errs, fmt.Sprintf("%s: field %s missing", path, name))
				}
				continue
			}
			errs = append(errs, shapeDiff(path+"."+name, v, vw)...)
		}
		for name := range g.vals {
			if _, ok := w[name]; !ok {
				if _, ok := w[name+"?"]; !ok {
					errs = append(errs, fmt.Sprintf("%s: field %s is not in the Java class", path, name))
				}
			}
		}
		sort.Strings(errs)
		return errs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want an array", path, got)}
		}
		var errs []string
		for i, v := range g {
			errs = append(errs, shapeDiff(fmt.Sprintf("%s[%d]", path, i), v, w[0])...)
		}
		return errs
	case float64:
		if _, ok := got.(float64); !ok {
			return []string{fmt.Sprintf("%s: got %T, want a number", path, got)}
		}
	case string:
		if _, ok := got.(string); !ok {
			return []string{fmt.Sprintf("%s: got %T, want a string", path, got)}
		}
	case bool:
		if _, ok := got.(bool); !ok {
			return []string{fmt.Sprintf("%s: got %T, want a boolean", path, got)}
		}
	}
	return nil
}

// TestShapeCheckerCatchesDifferences: the checker fails on a missing
// field, an extra field, a wrong type and a wrong key form.
func TestShapeCheckerCatchesDifferences(t *testing.T) {
	var want any
	_ = json.Unmarshal([]byte(javaShapes["TopicStatsTable"]), &want)
	for _, body := range []string{
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"minOffset":0,"maxOffset":0}}}`,
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"minOffset":0,"maxOffset":0,"lastUpdateTimestamp":0,"x":1}}}`,
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"minOffset":"0","maxOffset":0,"lastUpdateTimestamp":0}}}`,
		`{"offsetTable":{"t-0":{"minOffset":0,"maxOffset":0,"lastUpdateTimestamp":0}}}`,
	} {
		got, err := rawKeys([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if errs := shapeDiff("T", got, want); len(errs) == 0 {
			t.Errorf("no difference found in %s", body)
		}
	}
	got, _ := rawKeys([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"minOffset":0,"maxOffset":0,"lastUpdateTimestamp":0}}}`))
	if errs := shapeDiff("T", got, want); len(errs) > 0 {
		t.Errorf("a Java-shaped body failed: %v", errs)
	}
}
