package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine/record"
)

// TestSendKeepsClientProperties: a plain send stores the property string
// the client sent, in its order, with the CLUSTER property the broker adds
// (a trailing separator of an old client dropped); a client's own CLUSTER
// is replaced by the broker's, as RocketMQ's putProperty does.
func TestSendKeepsClientProperties(t *testing.T) {
	ctx := context.Background()
	br := open(t, memfs.New(nil), testConfig())
	t.Cleanup(func() { _ = br.Close() })
	createTopic(t, br, "T", 1)
	for _, c := range []struct{ sent, stored string }{
		{"UNIQ_KEY\x01U1\x02WAIT\x01true\x02TAGS\x01A", "UNIQ_KEY\x01U1\x02WAIT\x01true\x02TAGS\x01A\x02CLUSTER\x01DefaultCluster"},
		{"TAGS\x01A\x02KEYS\x01k\x02", "TAGS\x01A\x02KEYS\x01k\x02CLUSTER\x01DefaultCluster"},
		{"", "CLUSTER\x01DefaultCluster"},
		{"KEYS\x01" + strings.Repeat("k", 300), "KEYS\x01" + strings.Repeat("k", 300) + "\x02CLUSTER\x01DefaultCluster"}, // longer than plainSend's room
		{"TAGS\x01B\x02CLUSTER\x01theirs", "CLUSTER\x01DefaultCluster\x02TAGS\x01B"},                                     // map path: sorted
	} {
		res := br.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 0, Properties: c.sent, Body: []byte("b"), Cluster: "DefaultCluster"})
		if res.Code != broker.Success {
			t.Fatalf("send %q: %v %s", c.sent, res.Code, res.Remark)
		}
		if err := br.Store().WaitDispatched(ctx, br.Store().CommitLog().MaxOffset()); err != nil {
			t.Fatal(err)
		}
		r, err := br.Store().GetMessage("g", "T", 0, res.QueueOffset, 1, nil)
		if err != nil || len(r.Messages) != 1 {
			t.Fatalf("get %d: %v", res.QueueOffset, err)
		}
		info, err := record.Check(r.Messages[0].Record, -1, true)
		if err != nil {
			t.Fatal(err)
		}
		got := string(info.Properties)
		r.Release()
		if got != c.stored {
			t.Fatalf("sent %q: stored properties %q, want %q", c.sent, got, c.stored)
		}
	}
}
