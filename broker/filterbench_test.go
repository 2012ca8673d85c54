package broker_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
)

// BenchmarkPullFilter measures a 32-message pull through Broker.Pull with
// no filter ("*"), a tag filter and a SQL92 filter; every message matches,
// so the three do the same reading and differ only by the filter's cost
// (for SQL92, decoding each record's properties and evaluating).
//
//	go test ./broker -run '^$' -bench PullFilter
func BenchmarkPullFilter(b *testing.B) {
	const backlog = 4096
	cfg := testConfig()
	cfg.EnablePropertyFilter = true
	cfg.Store.CommitLogFileSize = 8 << 20
	cfg.Store.ConsumeQueueUnits = backlog * 2
	br := open(b, memfs.New(nil), cfg)
	b.Cleanup(func() { _ = br.Close() })
	createTopic(b, br, "T", 1)
	ctx := context.Background()
	var end int64
	for i := range backlog {
		m := &engine.Message{Topic: "T", Body: make([]byte, 256), Properties: map[string]string{
			"TAGS": "A", "KEYS": "k" + strconv.Itoa(i), "a": strconv.Itoa(i), "b": "x", "region": "eu-west"}}
		res, err := br.Store().Put(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	if err := br.Store().WaitDispatched(ctx, end); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, typ, expr string }{
		{"none", "TAG", "*"}, {"tag", "TAG", "A || B"}, {"sql92", "SQL92", "a >= 0 AND b = 'x' AND region IN ('eu-west', 'us')"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var off int64
			for b.Loop() {
				req := &broker.PullRequest{ConsumerGroup: "g", Topic: "T", QueueOffset: off, MaxMsgNums: 32,
					SysFlag: broker.FlagSubscription, Subscription: c.expr, ExpressionType: c.typ}
				resp, err := br.Pull(ctx, req)
				if err != nil || resp.Code != broker.Success || resp.MsgCount != 32 {
					b.Fatal(err, resp.Code, resp.Remark, resp.MsgCount)
				}
				if off = resp.NextBeginOffset; off+32 > backlog {
					off = 0
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/msg")
		})
	}
}
