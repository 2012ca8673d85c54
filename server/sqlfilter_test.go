package server_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// sqlHeartbeat registers group on topic with a SQL92 subscription.
func (e *env) sqlHeartbeat(cl *remoting.Client, clientID, group, topic, expr string, version int64) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"clientID": clientID,
		"consumerDataSet": []any{map[string]any{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
			"messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
			"subscriptionDataSet": []any{map[string]any{"topic": topic, "subString": expr, "subVersion": version,
				"expressionType": "SQL92"}}}},
	})
	wantCode(e.t, call(e.t, cl, remoting.CodeHeartBeat, body), remoting.CodeSuccess)
}

func sqlEnv(t *testing.T, enable bool) *env {
	return newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.EnablePropertyFilter = enable })
}

func TestSQL92PullFiltersByProperties(t *testing.T) {
	e := sqlEnv(t, true)
	for i := range 10 {
		wantCode(t, e.send("S", 0, "m"+strconv.Itoa(i), props("a", strconv.Itoa(i))), remoting.CodeSuccess)
	}
	wantCode(t, e.send("S", 0, "none", props("b", "1")), remoting.CodeSuccess)
	waitDispatched(t, e.b, "S", 0, 11)
	e.sqlHeartbeat(e.cl, "c1", "G", "S", "a BETWEEN 3 AND 5 OR a IN ('8')", 1)
	// Without the subscription flag: the registered filter.
	resp := e.call(remoting.CodePullMessage, nil, pullReq("G", "S", 0, 0, 0, 0)...)
	wantCode(t, resp, remoting.CodeSuccess)
	var got []string
	for _, m := range records(t, resp.Body) {
		got = append(got, string(m.Body))
	}
	if want := "[m3 m4 m5 m8]"; !eqStrings(got, want) {
		t.Fatalf("filtered pull: %v, want %s", got, want)
	}
	if resp.ExtFields["nextBeginOffset"] != "11" {
		t.Fatalf("nextBeginOffset %s", resp.ExtFields["nextBeginOffset"])
	}
	// With the flag the request's expression is used.
	kv := pullReq("G", "S", 0, 0, 4, 0)
	kv[17], kv[21] = "a IS NULL", "SQL92"
	resp = e.call(remoting.CodePullMessage, nil, kv...)
	wantCode(t, resp, remoting.CodeSuccess)
	if ms := records(t, resp.Body); len(ms) != 1 || string(ms[0].Body) != "none" {
		t.Fatalf("flag pull: %d records", len(ms))
	}
	// A malformed expression in the request: SUBSCRIPTION_PARSE_FAILED.
	kv[17] = "a >"
	wantCode(t, e.call(remoting.CodePullMessage, nil, kv...), remoting.CodeSubscriptionParseFailed)
	// A malformed registered one is not registered: FILTER_DATA_NOT_EXIST.
	e.sqlHeartbeat(e.cl, "c2", "Bad", "S", "a > 'x'", 1)
	wantCode(t, e.call(remoting.CodePullMessage, nil, pullReq("Bad", "S", 0, 0, 0, 0)...), 27)
	// A pull newer than the registered subscription: SUBSCRIPTION_NOT_LATEST
	// (checked before the filter data, as in PullMessageProcessor).
	old := pullReq("G", "S", 0, 0, 0, 0)
	old[19] = "5"
	wantCode(t, e.call(remoting.CodePullMessage, nil, old...), remoting.CodeSubscriptionNotLatest)
}

func eqStrings(got []string, want string) bool {
	b, _ := json.Marshal(got)
	s := string(b)
	return "["+joinNoQuotes(got)+"]" == want || s == want
}

func joinNoQuotes(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

func TestSQL92DisabledAndCheckClientConfig(t *testing.T) {
	off := sqlEnv(t, false)
	wantCode(t, off.send("S", 0, "x", props("a", "1")), remoting.CodeSuccess)
	waitDispatched(t, off.b, "S", 0, 1)
	off.sqlHeartbeat(off.cl, "c1", "G", "S", "a = 1", 1)
	wantCode(t, off.call(remoting.CodePullMessage, nil, pullReq("G", "S", 0, 0, 0, 0)...), remoting.CodeSystemError)
	check := func(e *env, typ, expr string) *remoting.RemotingCommand {
		body, _ := json.Marshal(map[string]any{"clientId": "c", "group": "G",
			"subscriptionData": map[string]any{"topic": "S", "subString": expr, "expressionType": typ}})
		return e.call(46, body)
	}
	wantCode(t, check(off, "SQL92", "a = 1"), remoting.CodeSystemError)
	wantCode(t, check(off, "TAG", "*"), remoting.CodeSuccess)
	on := sqlEnv(t, true)
	wantCode(t, check(on, "SQL92", "a = 1"), remoting.CodeSuccess)
	resp := check(on, "SQL92", "a = = 1")
	wantCode(t, resp, remoting.CodeSubscriptionParseFailed)
	if resp.Remark == "" {
		t.Fatal("no reason for the parse failure")
	}
	wantCode(t, on.call(46, nil), remoting.CodeSuccess)
	wantCode(t, on.call(46, []byte("{not json")), remoting.CodeSystemError)
}
