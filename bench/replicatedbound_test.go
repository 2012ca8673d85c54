package bench

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// TestBoundSendWaitsForTwoLogs: a send through the bound returns once the
// first node's broker stored it and two of the three logs synced its
// frame, and a log's failure fails the sends instead of leaving them
// waiting.
func TestBoundSendWaitsForTwoLogs(t *testing.T) {
	bc := broker.Config{Store: engine.Config{CommitLogFileSize: 4 << 20, FlushDiskType: engine.SyncFlush, Logger: quietLog}}
	g, err := openBound(t.TempDir(), bc, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.close(); err != nil {
			t.Error(err)
		}
	}()
	req := boundRequest(1, make([]byte, 100))
	var size int64
	for seq := uint64(1); seq <= 20; seq++ {
		if res := g.send(int(seq%2), seq, req); res.Code != broker.Success {
			t.Fatalf("send %d: %v %s", seq, res.Code, res.Remark)
		}
		first := g.first.Store().CommitLog().MaxOffset()
		if seq == 1 {
			size = first
		}
		if first != int64(seq)*size {
			t.Fatalf("send %d: the broker's CommitLog ends at %d, want %d", seq, first, int64(seq)*size)
		}
		want, holding := int64(seq)*int64(mirrorFrame+len(req.Body)), 0
		for _, m := range g.mirrors {
			if m.written.Load() >= want {
				holding++
			}
		}
		if holding < 2 {
			t.Fatalf("send %d answered with %d of the 3 logs holding it", seq, holding)
		}
	}
	// A log's connection lost: the next sends fail, none hangs.
	_ = g.mirrors[0].conn.Close()
	done := make(chan broker.SendResult, 1)
	go func() {
		for seq := uint64(21); ; seq++ {
			if res := g.send(0, seq, req); res.Code != broker.Success {
				done <- res
				return
			}
		}
	}()
	select {
	case res := <-done:
		if res.Code != broker.SystemError || res.Remark == "" {
			t.Errorf("send after a log failed: %v %q, want a system error naming it", res.Code, res.Remark)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sends kept succeeding or hung after a log's connection closed")
	}
}

// TestReplicatedBoundRow: the bound runs as a row of Replicated beside
// the single node, with its ratio and each broker's writes.
func TestReplicatedBoundRow(t *testing.T) {
	rs, err := Replicated(context.Background(), ReplicatedOptions{Dir: t.TempDir(), Bodies: []int{128},
		Producers: 4, Warmup: 100 * time.Millisecond, Time: 300 * time.Millisecond,
		Repeats: 1, FileSize: 8 << 20, LogStores: []string{ReplicatedBound}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results, want the single node and the bound: %+v", len(rs), rs)
	}
	b := rs[1]
	if b.Msgs == 0 || b.Bound == nil || b.Bound.Ratio <= 0 || b.Backend != "mmap×3 "+ReplicatedBound {
		t.Fatalf("bound row: %+v", b)
	}
	t.Logf("%s %.0f msgs/s, %.0f %% of single: %s", b.Backend, b.MsgsPerS, 100*b.Bound.Ratio, b.Note)
}

// boundRequest is a send of body to queue of the bench topic.
func boundRequest(queue int32, body []byte) *broker.SendRequest {
	return &broker.SendRequest{ProducerGroup: "bench", Topic: "BenchReplicated", DefaultTopic: record.DefaultTopic,
		DefaultTopicQueueNums: 8, QueueID: queue, Body: body, BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
}
