package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
)

// waitMessage waits until topic/qid holds a message at off and returns it.
// It waits with held pulls (woken by the arrival hook), not by polling.
func waitMessage(t *testing.T, b *broker.Broker, topic string, qid int32, off int64, within time.Duration) *record.MessageExt {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		if phy, err := b.Store().CommitLogOffsetInQueue(topic, qid, off); err == nil {
			m, err := b.Store().LookMessageByOffset(phy)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no message at %s/%d offset %d after %v", topic, qid, off, within)
		}
		// Pull at the queue's end: a pull there is held until the next
		// arrival (one past the end would be OFFSET_MOVED).
		r := pullReq("waitMessage", topic, qid, min(off, b.Store().MaxOffsetInQueue(topic, qid)))
		r.SysFlag |= broker.FlagSuspend
		r.SuspendTimeoutMillis = max(1, left.Milliseconds())
		resp, err := b.Pull(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != broker.Success && resp.Code != broker.PullNotFound && resp.Code != broker.PullRetryImmediately {
			t.Fatalf("waiting pull: %v %s", resp.Code, resp.Remark)
		}
	}
}

func TestSendBackToDLQ(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	g := config.NewSubscriptionGroupConfig("g")
	g.RetryMaxTimes = 3
	b.Groups().Update(g)
	orig := put(t, b, msg("T", 0, "A", "k1"))
	ctx := context.Background()
	retry := config.RetryTopic("g")
	phy := orig.WroteOffset
	for i := 0; i < 3; i++ {
		// The configured levels are 50..250 ms, so use level 1 to stay fast.
		if r := b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: phy, Group: "g", DelayLevel: 1}); r.Code != broker.Success {
			t.Fatalf("send back %d: %+v", i, r)
		}
		m := waitMessage(t, b, retry, 0, int64(i), 2*time.Second)
		if m.ReconsumeTimes != int32(i+1) || m.Properties[record.PropertyRetryTopic] != "T" ||
			m.Properties[record.PropertyOriginMessageID] != orig.MsgID() || m.Properties[record.PropertyDelayTimeLevel] != "" {
			t.Fatalf("retry %d: reconsume %d props %v", i, m.ReconsumeTimes, m.Properties)
		}
		phy = m.CommitLogOffset
	}
	if tc, _ := b.Topics().Get(retry); tc.Perm != 6 {
		t.Fatalf("retry perm %d", tc.Perm)
	}
	if r := b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: phy, Group: "g"}); r.Code != broker.Success {
		t.Fatalf("%+v", r)
	}
	dlq := config.DLQTopic("g")
	m := waitMessage(t, b, dlq, 0, 0, time.Second)
	if m.ReconsumeTimes != 4 || m.Properties[record.PropertyOriginMessageID] != orig.MsgID() {
		t.Fatalf("dlq message %+v", m)
	}
	if tc, ok := b.Topics().Get(dlq); !ok || tc.Perm != 6 {
		t.Fatalf("dlq topic %+v", tc)
	}
}

func TestSendBackDefaultLevelAndNegative(t *testing.T) {
	b := open(t, memfs.New(nil), testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	orig := put(t, b, msg("T", 0, "A", ""))
	ctx := context.Background()
	if r := b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: orig.WroteOffset, Group: "g"}); r.Code != broker.Success {
		t.Fatal(r)
	}
	// level 3 + 0 → schedule queue 2
	m := waitMessage(t, b, record.ScheduleTopic, 2, 0, time.Second)
	if m.Properties[record.PropertyRealTopic] != config.RetryTopic("g") || m.Properties[record.PropertyDelayTimeLevel] != "3" {
		t.Fatalf("%v", m.Properties)
	}
	if r := b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: orig.WroteOffset, Group: "g", DelayLevel: -1}); r.Code != broker.Success {
		t.Fatal(r)
	}
	waitMessage(t, b, config.DLQTopic("g"), 0, 0, time.Second)
	if r := b.SendMsgBack(ctx, &broker.SendMsgBackRequest{Offset: 1 << 40, Group: "g"}); r.Code != broker.SystemError {
		t.Fatalf("bad offset: %+v", r)
	}
}
