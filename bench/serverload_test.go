package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/server"
)

// TestServerLoadRemoting runs the server-load driver against an
// in-process server: every acknowledged message is consumed, and each
// stream's sends are spread over its QueuesPerStream queues (which its
// consumer pulls), so no queue of the topic is left empty.
func TestServerLoadRemoting(t *testing.T) {
	var bc broker.Config
	bc.Store.CommitLogFileSize = 8 << 20
	bc.Store.ConsumeQueueUnits = 20000
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0", Broker: bc})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	const streams, queues = 2, 3
	tg := &bench.RemotingTarget{Addr: n.BrokerAddr, PID: os.Getpid(), Topic: "LoadT", Group: "load_g",
		QueuesPerStream: queues}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.Prepare(ctx, streams); err != nil {
		t.Fatal(err)
	}
	r := bench.RunServerLoad(tg, "rocketstore", bench.ServerLoad{Conns: streams, Window: 16, Body: 64,
		Duration: 300 * time.Millisecond, Consumers: true, Flush: "async"})
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if r.Acked < streams*queues || r.Consumed != r.Acked || r.Failed != 0 {
		t.Fatalf("acked %d, consumed %d, failed %d", r.Acked, r.Consumed, r.Failed)
	}
	// The timeline accounts for every consumed message, slice by slice,
	// in send order, each slice starting before the run's last ack (a
	// message is sent before it is acknowledged; a bound on the wall
	// clock would fail on a loaded machine, where a producer checks its
	// deadline in time and sends a scheduling delay later).
	var inTimeline int64
	for i, b := range r.Timeline {
		inTimeline += b.Count
		if i > 0 && b.AtMs <= r.Timeline[i-1].AtMs || float64(b.AtMs) > r.Seconds*1000 || b.Count <= 0 || b.P50 > b.P99 || b.P99 > b.Max {
			t.Fatalf("timeline slice %d: %+v", i, b)
		}
	}
	if inTimeline != r.Consumed || len(r.Timeline) < 2 {
		t.Fatalf("timeline holds %d messages in %d slices, %d consumed", inTimeline, len(r.Timeline), r.Consumed)
	}
	store := n.Broker.Store()
	var total int64
	for q := range int32(streams * queues) {
		got := store.MaxOffsetInQueue("LoadT", q)
		if got == 0 {
			t.Errorf("queue %d has no messages", q)
		}
		total += got
	}
	if total != r.Acked {
		t.Fatalf("%d messages in the queues, %d acknowledged", total, r.Acked)
	}
}
