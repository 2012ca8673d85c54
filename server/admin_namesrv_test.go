package server_test

import (
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// On a name server with registered brokers the name-server admin codes
// answer from the route table; the broker codes are not served there.
func TestAdminNameServerRoleWithRegisteredBrokers(t *testing.T) {
	_, addr := nameServer(t, nil)
	cl := dialAddr(t, addr)
	wantCode(t, registerBroker(t, cl, "C1", "b1", "10.0.0.1:10911", 0, "", javaRegisterBody(3, map[string]int{"A": 4, "B": 2})), 0)
	wantCode(t, registerBroker(t, cl, "C2", "b2", "10.0.0.2:10911", 0, "", javaRegisterBody(1, map[string]int{"B": 2, "Z": 1})), 0)

	resp := call(t, cl, 224, nil, "cluster", "C1")
	wantCode(t, resp, 0)
	checkShape(t, "TopicList", resp.Body)
	var tl admin.TopicList
	if err := admin.Unmarshal(resp.Body, &tl); err != nil || strings.Join(tl.TopicList, ",") != "A,B" {
		t.Fatalf("topics of C1: %+v %v", tl, err)
	}
	resp = call(t, cl, 304, nil)
	wantCode(t, resp, 0)
	if err := admin.Unmarshal(resp.Body, &tl); err != nil || strings.Join(tl.TopicList, ",") != "C1,C2,b1,b2" || tl.BrokerAddr == "" {
		t.Fatalf("system topics %+v %v", tl, err)
	}

	// Wiping b1's write permission changes its routes only.
	resp = call(t, cl, 205, nil, "brokerName", "b1")
	if resp.ExtFields["wipeTopicCount"] != "2" {
		t.Fatalf("wiped %v", resp.ExtFields)
	}
	rd := getRoute(t, cl, "B")
	for _, q := range rd.QueueDatas {
		if (q.BrokerName == "b1") != (q.Perm == 4) {
			t.Fatalf("route of B after the wipe: %+v", rd.QueueDatas)
		}
	}
	if resp = call(t, cl, 327, nil, "brokerName", "b1"); resp.ExtFields["addTopicCount"] != "2" {
		t.Fatalf("added %v", resp.ExtFields)
	}

	// Data version: the one b1 registered.
	resp = call(t, cl, 322, []byte(`{"timestamp":1700000000000,"counter":3}`), "brokerAddr", "10.0.0.1:10911", "brokerName", "b1", "clusterName", "C1", "brokerId", "0")
	wantCode(t, resp, 0)
	checkShape(t, "DataVersion", resp.Body)
	if resp.ExtFields["changed"] != "false" {
		t.Fatalf("same version: %v", resp.ExtFields)
	}
	resp = call(t, cl, 322, []byte(`{"timestamp":1700000000000,"counter":4}`), "brokerAddr", "10.0.0.1:10911")
	if resp.ExtFields["changed"] != "true" {
		t.Fatalf("newer version: %v", resp.ExtFields)
	}
	if resp = call(t, cl, 322, nil, "brokerAddr", "10.9.9.9:1"); resp.ExtFields["changed"] != "true" {
		t.Fatalf("unknown broker: %v", resp.ExtFields)
	}

	// KV and name-server config are served; broker admin codes are not.
	wantCode(t, call(t, cl, 100, nil, "namespace", "ORDER_TOPIC_CONFIG", "key", "A", "value", "b1:4"), 0)
	if v := call(t, cl, 101, nil, "namespace", "ORDER_TOPIC_CONFIG", "key", "A").ExtFields["value"]; v != "b1:4" {
		t.Fatalf("kv %q", v)
	}
	wantCode(t, call(t, cl, 319, nil), 0)
	for _, code := range []int32{202, 208, 28, 21} {
		wantCode(t, call(t, cl, code, nil, "topic", "A", "consumerGroup", "G"), remoting.CodeRequestCodeNotSupported)
	}
}
