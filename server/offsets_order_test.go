package server_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// A consumer's offset commit is applied before any request it sends after
// it on the same connection is served. rocketmq-client-go applies a reset
// (RESET_CONSUMER_CLIENT_OFFSET, 220) by sending UPDATE_CONSUMER_OFFSET
// and, right behind it, QUERY_CONSUMER_OFFSET for the queue it pulls
// again; its periodic persist likewise sends an older offset just before
// the reset's. Served on two workers, the query (or the older commit) can
// overtake the commit: the Go runtime runs the goroutine woken last first,
// so two frames read in one go are served in reverse order more often than
// not. The client then pulls from its old offset and the reset is lost
// for that queue (e2e TestAdminCodesWithGoClients failed so 2 runs in 6).
// Both frames go out in one write, so that the server reads them together.
// The order must hold with a rate limiter too, whose token wait must not
// hold the connection's reader (so the commits cannot simply be answered
// on it): "rate limit, waits" makes most requests wait for their token.
func TestOffsetCommitOrderedOnConnection(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits server.Limits
	}{
		{"no limiter", server.Limits{}},
		{"rate limit", server.Limits{ConnRequestRate: 1e6, MaxInFlight: 64}},
		{"rate limit, waits", server.Limits{ConnRequestRate: 4000, ConnRequestBurst: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testOffsetCommitOrdered(t, c.limits)
		})
	}
}

func testOffsetCommitOrdered(t *testing.T, limits server.Limits) {
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.Security.Limits = limits })
	wantCode(t, e.send("TopicCommitOrder", 0, "m", ""), remoting.CodeSuccess)
	nc, err := net.Dial("tcp", e.adr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const rounds = 200
	stale := 0
	for i := int64(1); i <= rounds; i++ {
		commit := request(remoting.CodeUpdateConsumerOffset, "consumerGroup", "GroupCommitOrder",
			"topic", "TopicCommitOrder", "queueId", "0", "commitOffset", strconv.FormatInt(i, 10))
		if i%2 == 0 { // the Java client commits one-way, the Go client not
			commit.Flag |= remoting.FlagOneway
		}
		query := request(remoting.CodeQueryConsumerOffset, "consumerGroup", "GroupCommitOrder",
			"topic", "TopicCommitOrder", "queueId", "0")
		frames, err := commit.AppendFrame(nil)
		if err == nil {
			frames, err = query.AppendFrame(frames)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		for {
			resp, err := remoting.ReadFrame(nc, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Opaque != query.Opaque {
				continue // the commit's answer (not one-way)
			}
			wantCode(t, resp, remoting.CodeSuccess)
			if got := resp.ExtFields["offset"]; got != strconv.FormatInt(i, 10) {
				stale++
				t.Logf("round %d: query answered offset %s, committed just before it", i, got)
			}
			break
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d queries overtook the commit sent before them on the connection", stale, rounds)
	}
}

// request builds a request with ext fields (name, value, ...).
func request(code int32, kv ...string) *remoting.RemotingCommand {
	req := remoting.NewRequest(code, nil)
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	return req
}
