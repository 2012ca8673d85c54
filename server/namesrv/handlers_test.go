package namesrv

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// fakeHost decodes every registration body to one topic table.
func fakeHost(topics map[string]config.TopicConfig) Host {
	return Host{
		ParseRegisterBody: func([]byte, bool) (map[string]config.TopicConfig, config.DataVersion, error) {
			return topics, config.DataVersion{Counter: 1}, nil
		},
		ParseDataVersion: func([]byte) (config.DataVersion, error) { return config.DataVersion{}, errors.New("not used") },
		Refuse: func(req *remoting.RemotingCommand, _ *remoting.Conn, err error) (*remoting.RemotingCommand, error) {
			return badRequest(req, err)
		},
	}
}

// fakeLocal is an in-process broker "local" with topics T and L; it
// records the topics deleted and the write permissions changed.
type fakeLocal struct {
	deleted []string
	wiped   int
}

func (l *fakeLocal) local() *Local {
	bd := func() BrokerData {
		return BrokerData{Cluster: "C", BrokerName: "local", BrokerAddrs: map[string]string{"0": "127.0.0.1:9"}}
	}
	return &Local{
		Route: func(topic string) (TopicRouteData, bool) {
			if topic != "T" && topic != "L" {
				return TopicRouteData{}, false
			}
			return TopicRouteData{QueueDatas: []QueueData{{BrokerName: "local", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
				BrokerDatas: []BrokerData{bd()}}, true
		},
		BrokerData:   bd,
		TopicNames:   func() []string { return []string{"L", "T"} },
		DataVersion:  func() config.DataVersion { return config.DataVersion{Counter: 7} },
		SetWritePerm: func(bool) (int, error) { l.wiped += 2; return 2, nil },
		DeleteTopic: func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
			l.deleted = append(l.deleted, req.ExtFields["topic"])
			return req.NewResponse(remoting.CodeSuccess, ""), nil
		},
	}
}

// newHandlers returns handlers whose registered broker-a holds T; local
// is the in-process broker, or nil.
func newHandlers(t *testing.T, local *Local) *Handlers {
	t.Helper()
	rt := NewRouteTable(clockwork.NewFakeClockAt(time.Unix(1_700_000_000, 0)), 120*time.Second)
	h := NewHandlers(Config{Routes: rt, Local: local}, fakeHost(map[string]config.TopicConfig{"T": config.NewTopicConfig("T")}))
	resp := h.call(t, CodeRegisterBroker, "brokerName", "broker-a", "brokerAddr", "127.0.0.1:1", "clusterName", "C",
		"haServerAddr", "", "brokerId", "0")
	if resp.Code != remoting.CodeSuccess {
		t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
	return h
}

// call runs the handler of code on a request with header kv.
func (h *Handlers) call(t *testing.T, code int32, kv ...string) *remoting.RemotingCommand {
	t.Helper()
	req := remoting.NewRequest(code, []byte("{}"))
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	resp, err := h.ByCode()[code](context.Background(), &remoting.Conn{}, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func routeOf(t *testing.T, h *Handlers, topic string) (TopicRouteData, int32) {
	t.Helper()
	resp := h.call(t, remoting.CodeGetRouteInfoByTopic, "topic", topic)
	var rd TopicRouteData
	if resp.Code == remoting.CodeSuccess {
		if err := json.Unmarshal(resp.Body, &rd); err != nil {
			t.Fatal(err)
		}
	}
	return rd, resp.Code
}

// TestRouteMergesLocalBroker: in the single-node default the in-process
// broker joins the registered groups of a topic's route, and its own
// topics have a route without a registration; without Local only the
// registered groups route.
func TestRouteMergesLocalBroker(t *testing.T) {
	h := newHandlers(t, (&fakeLocal{}).local())
	rd, _ := routeOf(t, h, "T")
	if len(rd.QueueDatas) != 2 || rd.QueueDatas[0].BrokerName != "broker-a" || rd.QueueDatas[1].BrokerName != "local" {
		t.Fatalf("route of T: %+v", rd.QueueDatas)
	}
	if _, code := routeOf(t, h, "L"); code != remoting.CodeSuccess {
		t.Fatalf("local-only topic L: code %d", code)
	}

	alone := newHandlers(t, nil)
	rd, _ = routeOf(t, alone, "T")
	if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "broker-a" {
		t.Fatalf("route of T without a local broker: %+v", rd.QueueDatas)
	}
	if _, code := routeOf(t, alone, "L"); code != remoting.CodeTopicNotExist {
		t.Fatalf("L without a local broker: code %d, want TOPIC_NOT_EXIST", code)
	}
}

// TestDeleteTopicInNamesrvReachesLocalBroker: DELETE_TOPIC_IN_NAMESRV
// drops the registered routes and, in the single-node default, deletes
// the topic from the in-process broker too.
func TestDeleteTopicInNamesrvReachesLocalBroker(t *testing.T) {
	local := &fakeLocal{}
	h := newHandlers(t, local.local())
	if resp := h.call(t, remoting.CodeDeleteTopicInNamesrv, "topic", "T"); resp.Code != remoting.CodeSuccess {
		t.Fatalf("delete: %d %s", resp.Code, resp.Remark)
	}
	if len(local.deleted) != 1 || local.deleted[0] != "T" {
		t.Fatalf("local broker deleted %v, want [T]", local.deleted)
	}
	if rd := h.routes.Route("T"); len(rd.QueueDatas) != 0 {
		t.Fatalf("registered route of T after delete: %+v", rd.QueueDatas)
	}
}

// TestWipeWritePermCountsBothSides: WIPE_WRITE_PERM_OF_BROKER of the
// in-process broker's name counts the local topics it changed.
func TestWipeWritePermCountsBothSides(t *testing.T) {
	local := &fakeLocal{}
	h := newHandlers(t, local.local())
	resp := h.call(t, codeWipeWritePermOfBroker, "brokerName", "local")
	if resp.Code != remoting.CodeSuccess || resp.ExtFields["wipeTopicCount"] != "2" || local.wiped != 2 {
		t.Fatalf("wipe local: %d %v, local changed %d", resp.Code, resp.ExtFields, local.wiped)
	}
	resp = h.call(t, codeWipeWritePermOfBroker, "brokerName", "broker-a")
	if resp.ExtFields["wipeTopicCount"] != "1" || local.wiped != 2 {
		t.Fatalf("wipe broker-a: %v, local changed %d", resp.ExtFields, local.wiped)
	}
}

// TestOrderTopicConfigInRegisterAnswer: the KV config's
// ORDER_TOPIC_CONFIG namespace is the body of a REGISTER_BROKER answer,
// and GET_KV_CONFIG reads what PUT_KV_CONFIG wrote until it is deleted.
func TestOrderTopicConfigInRegisterAnswer(t *testing.T) {
	h := newHandlers(t, nil)
	kv := []string{"namespace", "ORDER_TOPIC_CONFIG", "key", "T"}
	if resp := h.call(t, codePutKVConfig, append(kv, "value", "broker-a:4")...); resp.Code != remoting.CodeSuccess {
		t.Fatalf("put: %d %s", resp.Code, resp.Remark)
	}
	if resp := h.call(t, codeGetKVConfig, kv...); resp.ExtFields["value"] != "broker-a:4" {
		t.Fatalf("get: %d %v", resp.Code, resp.ExtFields)
	}
	resp := h.call(t, CodeRegisterBroker, "brokerName", "broker-a", "brokerAddr", "127.0.0.1:1", "clusterName", "C",
		"haServerAddr", "", "brokerId", "0")
	var body struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Table["T"] != "broker-a:4" {
		t.Fatalf("register answer body %q: %v", resp.Body, err)
	}
	h.call(t, codeDeleteKVConfig, kv...)
	if resp := h.call(t, codeGetKVConfig, kv...); resp.Code != remoting.CodeQueryNotFound {
		t.Fatalf("get after delete: %d", resp.Code)
	}
}
