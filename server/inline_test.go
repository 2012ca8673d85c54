package server_test

import (
	"testing"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// Sends are answered on the connection's read goroutine when they cannot
// wait (async flush, no rate limiter), and only sends: a send that waits
// for a group commit, or for a rate limiter's token, still goes to a
// worker, so that it cannot stop the connection from being read.
func TestInlineSends(t *testing.T) {
	for _, c := range []struct {
		name   string
		mod    func(*broker.Config, *server.Config)
		inline bool
	}{
		{"async flush", func(*broker.Config, *server.Config) {}, true},
		{"sync flush", func(bc *broker.Config, _ *server.Config) { bc.Store.FlushDiskType = engine.SyncFlush }, false},
		{"rate limit", func(_ *broker.Config, sc *server.Config) {
			sc.Security.Limits = server.Limits{ConnRequestRate: 1000}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.mod)
			before := e.s.RemotingStats().InlineRequests
			for range 3 {
				wantCode(t, e.send("TopicInline", 0, "m", ""), remoting.CodeSuccess)
			}
			e.call(remoting.CodeGetMaxOffset, nil, "topic", "TopicInline", "queueId", "0")
			got := e.s.RemotingStats().InlineRequests - before
			want := int64(0)
			if c.inline {
				want = 3
			}
			if got != want {
				t.Fatalf("%d requests answered inline, want %d (the three sends only)", got, want)
			}
		})
	}
}
