package broker_test

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/filter"
)

// BenchmarkBrokerSendPull measures Broker.SendMessage (1 KiB body, with
// its checks) and Broker.Pull (32 messages, tag filter) in process, the
// part of the send and pull paths the broker owns; pull carries its
// subscription, as a client's first pull of a queue does, and
// pull/registered takes the group's from its heartbeat, as the official
// clients' later pulls do.
//
//	go test ./broker -run '^$' -bench BrokerSendPull
func BenchmarkBrokerSendPull(b *testing.B) {
	ctx := context.Background()
	body := make([]byte, 1024)
	cfg := testConfig()
	cfg.Store.CommitLogFileSize = 64 << 20
	cfg.Store.ConsumeQueueUnits = 1 << 16
	br := open(b, memfs.New(nil), cfg)
	b.Cleanup(func() { _ = br.Close() })
	createTopic(b, br, "T", 1)
	props := "TAGS\x01A\x02KEYS\x01k\x02"
	send := func() broker.SendResult {
		return br.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 0, Properties: props, Body: body})
	}
	b.Run("send", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if r := send(); r.Code != broker.Success {
				b.Fatal(r.Code, r.Remark)
			}
		}
	})
	b.Run("pull", func(b *testing.B) {
		const backlog = 4096
		for br.Store().MaxOffsetInQueue("T", 0) < backlog {
			res := send()
			if res.Code != broker.Success {
				b.Fatal(res.Code)
			}
			if err := br.Store().WaitDispatched(ctx, br.Store().CommitLog().MaxOffset()); err != nil {
				b.Fatal(err)
			}
		}
		pullLoop(b, br, body, backlog, broker.PullRequest{ConsumerGroup: "g", Topic: "T", MaxMsgNums: 32,
			SysFlag: broker.FlagSubscription, Subscription: "A", ExpressionType: "TAG"})
	})
	b.Run("pull/registered", func(b *testing.B) {
		const backlog = 4096
		sd, err := filter.BuildSubscriptionData("T", "A")
		if err != nil {
			b.Fatal(err)
		}
		if code, remark := br.Heartbeat("c1", []broker.ConsumerData{{GroupName: "g", Subscriptions: []*filter.SubscriptionData{sd}}}); code != broker.Success {
			b.Fatal(code, remark)
		}
		pullLoop(b, br, body, backlog, broker.PullRequest{ConsumerGroup: "g", Topic: "T", MaxMsgNums: 32})
	})
}

// pullLoop pulls req's 32 messages at a time from the first backlog of
// queue 0, round and round.
func pullLoop(b *testing.B, br *broker.Broker, body []byte, backlog int64, req broker.PullRequest) {
	ctx := context.Background()
	b.SetBytes(32 * int64(len(body)))
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		r := req
		r.QueueOffset = off
		resp, err := br.Pull(ctx, &r)
		if err != nil || resp.Code != broker.Success || resp.MsgCount != 32 {
			b.Fatal(err, resp.Code, resp.MsgCount)
		}
		if off = resp.NextBeginOffset; off+32 > backlog {
			off = 0
		}
	}
}
