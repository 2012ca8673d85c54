package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"time"

	"google.golang.org/grpc"

	"github.com/rocketstore/rocketstore/bench"
	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// systemGRPCEcho names the results of the gRPC echo bound.
const systemGRPCEcho = "grpc-echo"

// serveGRPCEcho serves grpcEchoServer on addr until ctx ends, with
// serve's garbage collector target (setServeGC).
func serveGRPCEcho(ctx context.Context, addr string) error {
	setServeGC()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--server-grpc-echo-listen %s: %w", addr, err)
	}
	return serveGRPCEchoOn(ctx, ln)
}

// serverLoadGRPCEcho drives l through the gRPC echo bound
// (grpcEchoServer) in a child process of its own, as serve runs in one:
// the same generator and gRPC client as the rocketstore-grpc rows, the
// same grpc-go transport options as the proxy, and no store. Its server
// CPU a message is what a grpc-go server pays for the call alone.
func serverLoadGRPCEcho(ctx context.Context, queues int, l bench.ServerLoad) bench.ServerResult {
	fail := func(err error) bench.ServerResult {
		return bench.ServerResult{System: systemGRPCEcho, Body: l.Body, Conns: l.Conns, Window: l.Window, Flush: l.Flush,
			Consumers: l.Consumers, Err: err.Error()}
	}
	if l.Consumers {
		// The echo stores nothing to consume; its bound is of sends.
		l.Consumers = false
	}
	addr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "--server-grpc-echo-listen", addr)
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	if err := waitListening(addr, 15*time.Second); err != nil {
		return fail(err)
	}
	t := &bench.GRPCTarget{Addr: addr, PID: cmd.Process.Pid, Topic: "BenchServer", QueuesPerStream: queues}
	r := bench.RunServerLoad(t, systemGRPCEcho, l)
	r.Shape = "echo: SendMessage answered OK, nothing stored"
	return r
}

// grpcEchoServer is the bound of the gRPC rows of bench --server: a
// MessagingService whose SendMessage answers OK with each message's id
// and stores nothing, on the proxy's transport options (proxy.ServerOptions).
// Loaded with the same GRPCTarget as rocketstore's endpoint, its server
// CPU a message is what grpc-go, HTTP/2 and protobuf cost a unary call of
// that size: no server built on grpc-go answers one for less.
type grpcEchoServer struct {
	rmqpb.UnimplementedMessagingServiceServer
}

// SendMessage answers OK for every message of req.
func (grpcEchoServer) SendMessage(_ context.Context, req *rmqpb.SendMessageRequest) (*rmqpb.SendMessageResponse, error) {
	ok := &rmqpb.Status{Code: rmqpb.Code_OK, Message: "OK"}
	entries := make([]*rmqpb.SendResultEntry, len(req.GetMessages()))
	for i, m := range req.GetMessages() {
		entries[i] = &rmqpb.SendResultEntry{Status: ok, MessageId: m.GetSystemProperties().GetMessageId(), Offset: int64(i)}
	}
	return &rmqpb.SendMessageResponse{Status: ok, Entries: entries}, nil
}

// serveGRPCEchoOn serves grpcEchoServer on ln until ctx ends.
func serveGRPCEchoOn(ctx context.Context, ln net.Listener) error {
	gs := grpc.NewServer(proxy.ServerOptions(4 << 20)...)
	rmqpb.RegisterMessagingServiceServer(gs, grpcEchoServer{})
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case <-ctx.Done():
			gs.Stop() // Serve returns nil
		case <-served:
		}
	}()
	return gs.Serve(ln)
}
