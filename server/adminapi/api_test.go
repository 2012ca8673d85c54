package adminapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// fakeHost knows one producer group, PG.
type fakeHost struct{}

func (fakeHost) BrokerAddr() string             { return "127.0.0.1:10911" }
func (fakeHost) StoreDir() string               { return "" }
func (fakeHost) Consumers(string) []Consumer    { return nil }
func (fakeHost) ConsumerGroupsOnline() []string { return nil }
func (fakeHost) ParseSubscriptionGroup([]byte) (config.SubscriptionGroupConfig, error) {
	return config.SubscriptionGroupConfig{}, nil
}

func (fakeHost) ProducerConnections(group string) ([]admin.Connection, bool) {
	if group != "PG" {
		return nil, false
	}
	return []admin.Connection{{ClientID: "p-1", ClientAddr: "127.0.0.1:5000", Language: "JAVA", Version: 401}}, true
}

func (fakeHost) Refuse(req *remoting.RemotingCommand, _ *remoting.Conn, err error) (*remoting.RemotingCommand, error) {
	return badRequest(req, err)
}

func call(t *testing.T, h HandlerFunc, code int32, kv ...string) *remoting.RemotingCommand {
	t.Helper()
	req := remoting.NewRequest(code, nil)
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	resp, err := h(context.Background(), &remoting.Conn{}, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestProducerConnectionsFromHost: GET_PRODUCER_CONNECTION_LIST answers
// the host's connections of the group, and SYSTEM_ERROR naming a group
// no producer of which sent a heartbeat.
func TestProducerConnectionsFromHost(t *testing.T) {
	a := New(Config{}, fakeHost{})
	h := a.Handlers()[codeGetProducerConnectionList]
	resp := call(t, h, codeGetProducerConnectionList, "producerGroup", "PG")
	var pc struct {
		ConnectionSet []struct {
			ClientID string `json:"clientId"`
		} `json:"connectionSet"`
	}
	if err := json.Unmarshal(resp.Body, &pc); err != nil || resp.Code != remoting.CodeSuccess ||
		len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "p-1" {
		t.Fatalf("PG: code %d body %s (%v)", resp.Code, resp.Body, err)
	}
	resp = call(t, h, codeGetProducerConnectionList, "producerGroup", "Nope")
	if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, "Nope") {
		t.Fatalf("unknown group: %d %q", resp.Code, resp.Remark)
	}
}

// TestUnsupportedNamesTheAlternative: a code RocketMQ 4.x does not serve
// answers REQUEST_CODE_NOT_SUPPORTED with the code to use instead.
func TestUnsupportedNamesTheAlternative(t *testing.T) {
	resp := call(t, Unsupported()[217], 217)
	if resp.Code != remoting.CodeRequestCodeNotSupported || !strings.Contains(resp.Remark, "GET_KVLIST_BY_NAMESPACE (219)") {
		t.Fatalf("217: %d %q", resp.Code, resp.Remark)
	}
}

// TestSeriesWindow: a window's count and rate come from the newest
// sample and the oldest within the window; past the ten minutes of
// per-second samples the per-minute ones answer.
func TestSeriesWindow(t *testing.T) {
	var s series
	for i := range int64(2000) { // a sample a second, 10 messages each
		s.add(i*1000, i*10)
	}
	if sum, tps := s.window(time.Minute); sum != 600 || tps != 10 {
		t.Fatalf("last minute: sum %d tps %v, want 600 and 10", sum, tps)
	}
	if len(s.secs) != secSamples {
		t.Fatalf("%d per-second samples kept, want %d", len(s.secs), secSamples)
	}
	// From 199 s on: the oldest per-minute sample within is at 240 s.
	if sum, tps := s.window(30 * time.Minute); sum != (1999-240)*10 || tps != 10 {
		t.Fatalf("last 30 minutes: sum %d tps %v, want %d and 10 (from the per-minute samples)", sum, tps, (1999-240)*10)
	}
}

// TestCloseIsIdempotent: the server's Shutdown and Close both stop the
// API; the second call returns at once.
func TestCloseIsIdempotent(t *testing.T) {
	a := New(Config{}, fakeHost{}) // no broker: the sampler samples nothing
	a.Start()
	a.Close()
	a.Close()
}
