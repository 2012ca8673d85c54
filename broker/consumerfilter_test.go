package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/record"
)

func sqlSub(topic, expr string, version int64) broker.ConsumerData {
	return broker.ConsumerData{GroupName: "G", Subscriptions: []*filter.SubscriptionData{{Topic: topic, SubString: expr,
		SubVersion: version, ExpressionType: filter.ExpressionTypeSQL92}}}
}

func TestConsumerFilterPersistedAndLoadedAtStart(t *testing.T) {
	afs := afero.NewMemMapFs()
	cfg := testConfig()
	cfg.EnablePropertyFilter = true
	b := open(t, memfs.New(afs), cfg)
	if code, remark := b.Heartbeat("c1", []broker.ConsumerData{sqlSub("T", "a > 5", 10)}); code != broker.Success {
		t.Fatal(code, remark)
	}
	if got := b.FilterExpression("T", "G"); got != "a > 5" {
		t.Fatalf("registered: %q", got)
	}
	// A newer version replaces it; an older one is ignored.
	b.Heartbeat("c1", []broker.ConsumerData{sqlSub("T", "a > 6", 11)})
	b.Heartbeat("c1", []broker.ConsumerData{sqlSub("T", "a > 1", 9)})
	if got := b.FilterExpression("T", "G"); got != "a > 6" {
		t.Fatalf("after versions 11 and 9: %q", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, memfs.New(afs), cfg)
	if got := b.FilterExpression("T", "G"); got != "a > 6" {
		t.Fatalf("loaded at start: %q", got)
	}
	// A newer version that does not compile removes the filter, so that
	// pulls answer FILTER_DATA_NOT_EXIST.
	b.Heartbeat("c1", []broker.ConsumerData{sqlSub("T", "a >", 12)})
	if got := b.FilterExpression("T", "G"); got != "" {
		t.Fatalf("malformed newer version kept %q", got)
	}
	resp, err := b.Pull(context.Background(), &broker.PullRequest{ConsumerGroup: "G", Topic: "T", MaxMsgNums: 32})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != broker.TopicNotExist && resp.Code != broker.FilterDataNotExist {
		t.Fatalf("pull: %v %s", resp.Code, resp.Remark)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A corrupt file is an error naming it.
	fs := memfs.New(afs)
	if err := afero.WriteFile(afs, "config/consumerFilter.json", []byte("{bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = afs.Remove("config/consumerFilter.json.bak")
	if _, err := broker.Open(fs, cfg); !errors.Is(err, configfile.ErrCorrupt) {
		t.Fatalf("corrupt consumerFilter.json: %v", err)
	}
}

func TestSQL92PullMatchesOnlyTrue(t *testing.T) {
	cfg := testConfig()
	cfg.EnablePropertyFilter = true
	b := open(t, memfs.New(afero.NewMemMapFs()), cfg)
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	for _, v := range []string{"1", "x", "9"} {
		if _, err := b.Store().Put(ctx, &record.Message{Topic: "T", Body: []byte(v), Properties: map[string]string{"a": v}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Store().Put(ctx, &record.Message{Topic: "T", Body: []byte("none")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Store().WaitDispatched(ctx, b.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if err := b.Topics().Update(config.NewTopicConfig("T")); err != nil {
		t.Fatal(err)
	}
	b.Heartbeat("c1", []broker.ConsumerData{sqlSub("T", "a > 5 OR a IS NULL", 1)})
	resp, err := b.Pull(ctx, &broker.PullRequest{ConsumerGroup: "G", Topic: "T", MaxMsgNums: 32})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != broker.Success || resp.MsgCount != 2 {
		t.Fatalf("pull: %v %s, %d messages", resp.Code, resp.Remark, resp.MsgCount)
	}
}
