package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/server"
)

// grpcReplica is a replica served as `serve` with raft: and
// raft.grpcEndpoints serves it.
type grpcReplica struct {
	cn       *clusterNode
	grpcAddr string
	cl       rmqpb.MessagingServiceClient
	conn     *grpc.ClientConn
}

func (r *grpcReplica) close(t *testing.T) {
	if r.cn == nil {
		return
	}
	_ = r.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.cn.shutdown(ctx); err != nil {
		t.Error(err)
	}
	r.cn = nil
}

// startGRPCGroup starts three replicas on loopback from config files as
// an operator writes them, each serving gRPC at its raft.grpcEndpoints
// entry.
func startGRPCGroup(t *testing.T) []*grpcReplica {
	t.Helper()
	dir := t.TempDir()
	addr := func() string {
		a, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var ns, raft, grpcs, peers, eps []string
	for i := 1; i <= 3; i++ {
		ns, raft, grpcs = append(ns, addr()), append(raft, addr()), append(grpcs, addr())
		peers = append(peers, fmt.Sprintf("n%d@%s", i, raft[i-1]))
		eps = append(eps, fmt.Sprintf("n%d@%s", i, grpcs[i-1]))
	}
	quietLog := slog.New(slog.NewTextHandler(io.Discard, nil))
	var rs []*grpcReplica
	for i := 1; i <= 3; i++ {
		_, port, _ := net.SplitHostPort(addr())
		cfg := fmt.Sprintf("brokerName: broker-a\nlistenPort: %s\nnamesrvListen: %s\nflushDiskType: SYNC_FLUSH\n%s"+
			"raft:\n  nodeId: n%d\n  bind: %s\n  peers: [%s]\n  grpcEndpoints: [%s]\n",
			port, ns[i-1], namesrvLine(strings.Join(ns, ";")), i, raft[i-1], strings.Join(peers, ", "), strings.Join(eps, ", "))
		name := filepath.Join(dir, fmt.Sprintf("n%d.yaml", i))
		if err := os.WriteFile(name, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, rc, err := loadServeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		nc := server.NodeConfig{Dir: filepath.Join(dir, fmt.Sprintf("n%d", i))}
		if err := fc.Apply(&nc); err != nil {
			t.Fatal(err)
		}
		nc.Broker.Store.CommitLogFileSize, nc.Broker.Store.ConsumeQueueUnits = 1<<20, 1000
		nc.Broker.Index.MaxHashSlotNum, nc.Broker.Index.MaxIndexNum = 1000, 4000 // 400 MB a replica by default
		nc.Server.Logger, nc.Broker.Store.Logger = quietLog, quietLog
		listen, endpoints, err := rc.grpcListen(defaultGRPCListen, false)
		if err != nil || listen != grpcs[i-1] {
			t.Fatalf("n%d serves gRPC at %q (%v), want its raft.grpcEndpoints entry %s", i, listen, err, grpcs[i-1])
		}
		cn, err := startClusterNode(nc, rc, quietLog)
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.serveGRPC(clusterGRPC{addr: listen, endpoints: endpoints}, nc.Server.Security, quietLog); err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		r := &grpcReplica{cn: cn, grpcAddr: listen, cl: rmqpb.NewMessagingServiceClient(conn), conn: conn}
		rs = append(rs, r)
		t.Cleanup(func() { r.close(t) })
	}
	return rs
}

// leaderOf waits for a writable leader among the live replicas. Raft
// elects on its own timers and a node exports no event for becoming
// writable, so it polls, with a deadline.
func leaderOf(t *testing.T, rs []*grpcReplica) *grpcReplica {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rs {
			if r.cn != nil && r.cn.node.Writable() {
				return r
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader within 30 s")
	return nil
}

// TestClusterGRPCFailover: every replica of a replicated group serves
// gRPC and its routes name the leader's endpoint; pop state survives the
// leader's loss: the new leader delivers the messages never delivered and
// neither the acked ones nor those still in flight.
func TestClusterGRPCFailover(t *testing.T) {
	rs := startGRPCGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "failover-client")
	leader := leaderOf(t, rs)
	if err := (&bench.RemotingTarget{Addr: leader.cn.brokerAddr, Topic: "FailT", QueuesPerStream: 1}).Prepare(ctx, 1); err != nil {
		t.Fatal(err)
	}
	receive := func(r *grpcReplica, n int32, poll time.Duration) []*rmqpb.Message {
		t.Helper()
		s, err := r.cl.ReceiveMessage(ctx, &rmqpb.ReceiveMessageRequest{Group: &rmqpb.Resource{Name: "FailG"},
			MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "FailT"}, Id: -1}, BatchSize: n,
			FilterExpression:  &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
			InvisibleDuration: durationpb.New(time.Minute), LongPollingTimeout: durationpb.New(poll)})
		if err != nil {
			t.Fatal(err)
		}
		var out []*rmqpb.Message
		for {
			m, err := s.Recv()
			if err != nil {
				return out
			}
			if msg := m.GetMessage(); msg != nil {
				out = append(out, msg)
			}
		}
	}
	bodies := func(ms []*rmqpb.Message) (out []string) {
		for _, m := range ms {
			out = append(out, string(m.GetBody()))
		}
		slices.Sort(out)
		return out
	}
	routedTo := func(r *grpcReplica) string {
		t.Helper()
		qr, err := r.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "FailT"}})
		if err != nil || qr.GetStatus().GetCode() != rmqpb.Code_OK {
			return fmt.Sprint("route: ", qr.GetStatus(), err)
		}
		a := qr.GetMessageQueues()[0].GetBroker().GetEndpoints().GetAddresses()[0]
		return net.JoinHostPort(a.GetHost(), fmt.Sprint(a.GetPort()))
	}
	// Every replica routes to the leader (a follower learns of the topic
	// once it applies the leader's entry).
	waitRoutes := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for _, r := range rs {
			if r.cn == nil {
				continue
			}
			for got := routedTo(r); got != want; got = routedTo(r) {
				if time.Now().After(deadline) {
					t.Fatalf("replica at %s routes to %s, want the leader's %s", r.grpcAddr, got, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	waitRoutes(leader.grpcAddr)
	for _, r := range rs {
		if r == leader {
			continue
		}
		sr, err := r.cl.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
			Topic: &rmqpb.Resource{Name: "FailT"}, Body: []byte("to a follower"),
			SystemProperties: &rmqpb.SystemProperties{MessageId: "FOLLOWER", MessageType: rmqpb.MessageType_NORMAL}}}})
		if err != nil || sr.GetStatus().GetCode() == rmqpb.Code_OK {
			t.Fatalf("a send to the follower at %s: %v %v, want it refused", r.grpcAddr, sr.GetStatus(), err)
		}
		if got := receive(r, 1, 100*time.Millisecond); len(got) != 0 {
			t.Fatalf("a follower delivered %v", bodies(got))
		}
	}

	for i := range 10 {
		r, err := leader.cl.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
			Topic: &rmqpb.Resource{Name: "FailT"}, Body: []byte(fmt.Sprint("m", i)),
			SystemProperties: &rmqpb.SystemProperties{MessageId: fmt.Sprintf("FAILOVER%02d", i), MessageType: rmqpb.MessageType_NORMAL}}}})
		if err != nil || r.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("send %d: %v %v", i, r, err)
		}
	}
	got := receive(leader, 6, 2*time.Second)
	if len(got) != 6 {
		t.Fatalf("received %v, want 6 messages", bodies(got))
	}
	var acks []*rmqpb.AckMessageEntry
	for _, m := range got[:3] {
		acks = append(acks, &rmqpb.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
			ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
	}
	ar, err := leader.cl.AckMessage(ctx, &rmqpb.AckMessageRequest{Group: &rmqpb.Resource{Name: "FailG"},
		Topic: &rmqpb.Resource{Name: "FailT"}, Entries: acks})
	if err != nil || ar.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("ack: %v %v", ar, err)
	}
	delivered := bodies(got)

	leader.close(t)
	next := leaderOf(t, rs)
	waitRoutes(next.grpcAddr)
	var want []string
	for i := range 10 {
		if b := fmt.Sprint("m", i); !slices.Contains(delivered, b) {
			want = append(want, b)
		}
	}
	slices.Sort(want)
	if got := bodies(receive(next, 32, 2*time.Second)); !slices.Equal(got, want) {
		t.Fatalf("the new leader delivered %v, want only the never delivered %v (delivered before: %v)", got, want, delivered)
	}
}
