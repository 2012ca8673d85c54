package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/bench"
)

// TestGRPCEchoServesTheLoad drives the gRPC echo bound with the server
// load generator: every send is answered OK, and it stops when its
// context ends.
func TestGRPCEchoServesTheLoad(t *testing.T) {
	addr, stop := serveEcho(t, serveGRPCEchoOn)
	tg := &bench.GRPCTarget{Addr: addr, PID: os.Getpid(), Topic: "Echo", QueuesPerStream: 2}
	r := bench.RunServerLoad(tg, systemGRPCEcho, bench.ServerLoad{Conns: 2, Window: 8, Body: 64,
		Duration: 200 * time.Millisecond, Flush: "async"})
	if r.Err != "" || r.Acked == 0 || r.Failed != 0 {
		t.Fatalf("error %q, acked %d, failed %d", r.Err, r.Acked, r.Failed)
	}
	stop()
}

// serveEcho serves an echo bound with serve on a loopback listener and
// returns its address and a stop that ends serve's context and fails the
// test unless serve then returns nil within 10 s.
func serveEcho(t *testing.T, serve func(context.Context, net.Listener) error) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln) }()
	return ln.Addr().String(), func() {
		t.Helper()
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("echo server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the echo server did not stop with its context")
		}
	}
}

// TestServerSummaryEchoBound checks the summary's ratios of the echo
// bound: per repeat over remoting's, also for a load with consumers
// (the echo runs sends only).
func TestServerSummaryEchoBound(t *testing.T) {
	res := func(system string, consumers bool, rate, cpu float64) bench.ServerResult {
		return bench.ServerResult{System: system, Body: 128, Conns: 4, Window: 256, Flush: "async", Consumers: consumers,
			Acked: 1, MsgsPerS: rate, CPUPerMsg: cpu}
	}
	var b bytes.Buffer
	writeServerSummary(&b, []bench.ServerResult{
		res("rocketstore", true, 100, 10), res(systemGRPC, true, 20, 40), res(systemGRPCEcho, false, 30, 30),
		res("rocketstore", true, 200, 10), res(systemGRPC, true, 40, 50), res(systemGRPCEcho, false, 40, 20),
	})
	want := "| 128 B | async | 4 × 256 | true | 0.20 / 0.20 / 0.20 | 4.00 / 5.00 / 5.00 | 0.20 / 0.30 / 0.30 | 2.00 / 3.00 / 3.00 |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("summary lacks %q:\n%s", want, b.String())
	}
}
