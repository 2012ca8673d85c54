package server_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// TestRuntimeTotalsCountWhatClientsDid: msgPutTotalTodayNow is the
// messages the client stored and msgGetTotalTodayNow the messages its
// pulls received, whatever the committed offsets say (none committed,
// then one reset backwards); the group's counter agrees.
func TestRuntimeTotalsCountWhatClientsDid(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.heartbeat(e.cl, "ip@1", "G", map[string]string{"P": "*"}), remoting.CodeSuccess)
	for i := range 5 {
		wantCode(t, e.send("P", 0, "m"+strconv.Itoa(i), ""), remoting.CodeSuccess)
	}
	waitDispatched(t, e.b, "P", 0, 5)
	pulled := 0
	for _, off := range []int64{0, 2} { // 5, then 3 again: 8 delivered
		resp := e.call(remoting.CodePullMessage, nil, pullReq("G", "P", 0, off, 0, 0)...)
		wantCode(t, resp, remoting.CodeSuccess)
		pulled += len(records(t, resp.Body))
	}
	if pulled != 8 {
		t.Fatalf("pulled %d messages, want 8", pulled)
	}
	wantCode(t, e.call(remoting.CodeUpdateConsumerOffset, nil, "consumerGroup", "G", "topic", "P", "queueId", "0", "commitOffset", "1"), 0)

	info := func() admin.KVTable {
		var kv admin.KVTable
		decodeBody(t, e.call(28, nil), &kv)
		return kv
	}
	kv := info()
	if put, got := kv.Table["msgPutTotalTodayNow"], kv.Table["msgGetTotalTodayNow"]; put != "5" || got != "8" {
		t.Fatalf("msgPutTotalTodayNow %s, msgGetTotalTodayNow %s; want 5 and 8", put, got)
	}
	if m := kv.Table["msgGetTotalTodayMorning"]; m != "0" {
		t.Fatalf("msgGetTotalTodayMorning %s before any midnight, want 0", m)
	}
	if n := e.b.Stats().GroupGets()["P@G"]; n != 8 {
		t.Fatalf("GROUP_GET_NUMS counter of P@G %d, want 8", n)
	}
}

// TestMorningTotalsRotateAtMidnight: at each local midnight the broker
// totals become msg*TotalTodayMorning and the previous morning
// msg*TotalYesterdayMorning, as RocketMQ's BrokerStats.record does.
func TestMorningTotalsRotateAtMidnight(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 23, 59, 58, 0, time.Local))
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.Clock = clock })
	wantCode(t, e.send("P", 0, "a", ""), remoting.CodeSuccess)
	wantCode(t, e.send("P", 0, "b", ""), remoting.CodeSuccess)
	server.SampleStats(e.s)
	clock.Advance(3 * time.Second) // Jan 2, 00:00:01
	server.SampleStats(e.s)
	wantCode(t, e.send("P", 0, "c", ""), remoting.CodeSuccess)
	clock.Advance(24 * time.Hour) // Jan 3
	server.SampleStats(e.s)
	var kv admin.KVTable
	decodeBody(t, e.call(28, nil), &kv)
	for k, want := range map[string]string{"msgPutTotalTodayNow": "3", "msgPutTotalTodayMorning": "3",
		"msgPutTotalYesterdayMorning": "2", "msgGetTotalTodayMorning": "0"} {
		if kv.Table[k] != want {
			t.Errorf("%s = %s, want %s", k, kv.Table[k], want)
		}
	}
}
