package bench_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/server"
)

// TestServerLoadGRPC runs the server-load driver through the 5.x gRPC
// endpoint of an in-process server: every acknowledged send is received
// (and acked) by the pop consumers, and each stream's sends are spread
// over its queues.
func TestServerLoadGRPC(t *testing.T) {
	var bc broker.Config
	bc.Store.CommitLogFileSize = 8 << 20
	bc.Store.ConsumeQueueUnits = 20000
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0", Broker: bc})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	p, err := proxy.New(proxy.Config{Broker: n.Broker})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
		<-served
	}()
	const streams, queues = 2, 3
	rt := &bench.RemotingTarget{Addr: n.BrokerAddr, Topic: "LoadG", QueuesPerStream: queues}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Prepare(ctx, streams); err != nil {
		t.Fatal(err)
	}
	tg := &bench.GRPCTarget{Addr: ln.Addr().String(), PID: os.Getpid(), Topic: "LoadG", Group: "load_g", QueuesPerStream: queues}
	r := bench.RunServerLoad(tg, "rocketstore-grpc", bench.ServerLoad{Conns: streams, Window: 16, Body: 64,
		Duration: 300 * time.Millisecond, Consumers: true, Flush: "async"})
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if r.Acked < streams*queues || r.Consumed != r.Acked || r.Failed != 0 {
		t.Fatalf("acked %d, consumed %d, failed %d", r.Acked, r.Consumed, r.Failed)
	}
	var total int64
	for q := range int32(streams * queues) {
		got := n.Broker.Store().MaxOffsetInQueue("LoadG", q)
		if got == 0 {
			t.Errorf("queue %d has no messages", q)
		}
		total += got
	}
	if total != r.Acked {
		t.Fatalf("%d messages in the queues, %d acknowledged", total, r.Acked)
	}
}
