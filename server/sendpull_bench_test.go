package server_test

import (
	"strconv"
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
)

// BenchmarkSendPull measures the request path of plain sends
// (SEND_MESSAGE_V2, 1 KiB body, one request in flight) and pulls (32
// messages of a backlog) over loopback: remoting, the handlers, the broker
// checks and the store, as a client sees them.
//
//	go test ./server -run '^$' -bench SendPull
func BenchmarkSendPull(b *testing.B) {
	body := make([]byte, 1024)
	b.Run("send", func(b *testing.B) {
		e := newEnv(b)
		wantCode(b, e.send("B", 0, "warm", ""), remoting.CodeSuccess)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			resp := e.call(remoting.CodeSendMessageV2, body, "a", "PG", "b", "B", "c", "TBW102", "d", "4", "e", "0",
				"f", "0", "g", "1", "h", "0", "i", props("TAGS", "T", "KEYS", "k"), "j", "0", "k", "false", "m", "false")
			if resp.Code != remoting.CodeSuccess {
				b.Fatal(resp.Code, resp.Remark)
			}
		}
	})
	b.Run("pull", func(b *testing.B) {
		e := newEnv(b)
		const backlog = 2048
		for range backlog {
			wantCode(b, e.call(remoting.CodeSendMessageV2, body, "a", "PG", "b", "P", "c", "TBW102", "d", "4", "e", "0",
				"f", "0", "g", "1", "h", "0", "i", props("TAGS", "T"), "j", "0", "k", "false", "m", "false"), remoting.CodeSuccess)
		}
		waitDispatched(b, e.b, "P", 0, backlog)
		b.SetBytes(32 * int64(len(body)))
		b.ReportAllocs()
		off := 0
		for b.Loop() {
			resp := e.call(remoting.CodePullMessage, nil, "consumerGroup", "G", "topic", "P", "queueId", "0",
				"queueOffset", strconv.Itoa(off), "maxMsgNums", "32", "sysFlag", "4", "commitOffset", "0",
				"suspendTimeoutMillis", "0", "subscription", "T", "subVersion", "0", "expressionType", "TAG")
			if resp.Code != remoting.CodeSuccess {
				b.Fatal(resp.Code, resp.Remark)
			}
			if off += 32; off+32 > backlog {
				off = 0
			}
		}
	})
}
