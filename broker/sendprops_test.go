package broker_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
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
		r, err := br.Store().GetMessage("T", 0, res.QueueOffset, 1, nil)
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

// batchBody encodes messages as a SEND_BATCH_MESSAGE body
// (MessageDecoder.encodeMessage) with the given property strings.
func batchBody(props ...string) []byte {
	var b []byte
	for i, p := range props {
		body := []byte{byte('a' + i)}
		total := 20 + len(body) + 2 + len(p)
		b = binary.BigEndian.AppendUint32(b, uint32(total))
		b = binary.BigEndian.AppendUint32(b, 0) // MAGICCODE
		b = binary.BigEndian.AppendUint32(b, 0) // BODYCRC
		b = binary.BigEndian.AppendUint32(b, 0) // FLAG
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

// TestBatchKeepsClientProperties: each message of a batch keeps its own
// property string, gains the batch's properties it lacks and CLUSTER; a
// message's own CLUSTER is replaced (the map path, sorted).
func TestBatchKeepsClientProperties(t *testing.T) {
	ctx := context.Background()
	br := open(t, memfs.New(nil), testConfig())
	t.Cleanup(func() { _ = br.Close() })
	createTopic(t, br, "T", 1)
	res := br.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, Batch: true, Cluster: "DC",
		Properties: "WAIT\x01true\x02TAGS\x01H\x02CLUSTER\x01theirs\x02",
		Body:       batchBody("UNIQ_KEY\x01U1\x02TAGS\x01A", "", "KEYS\x01k\x02CLUSTER\x01mine")})
	if res.Code != broker.Success || res.MsgNum != 3 {
		t.Fatalf("batch: %v %s (%d messages)", res.Code, res.Remark, res.MsgNum)
	}
	if err := br.Store().WaitDispatched(ctx, br.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	r, err := br.Store().GetMessage("T", 0, res.QueueOffset, 3, nil)
	if err != nil || len(r.Messages) != 3 {
		t.Fatalf("get: %v", err)
	}
	defer r.Release()
	for i, want := range []string{
		"UNIQ_KEY\x01U1\x02TAGS\x01A\x02WAIT\x01true\x02CLUSTER\x01DC",
		"WAIT\x01true\x02TAGS\x01H\x02CLUSTER\x01DC",
		"CLUSTER\x01DC\x02KEYS\x01k\x02TAGS\x01H\x02WAIT\x01true",
	} {
		info, err := record.Check(r.Messages[i].Record, -1, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(info.Properties); got != want {
			t.Fatalf("message %d: stored properties %q, want %q", i, got, want)
		}
	}
}
