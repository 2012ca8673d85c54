package remoting

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// BenchmarkHalfFrameAttack measures a well-behaved producer's request rate
// (one request at a time, 1 KiB bodies, default Options) for 2 s without
// attack, then for 2 s while 20 connections that have sent no valid request
// each announce a 15 MiB frame, send half of it and stall. It reports both
// rates, their ratio (the target is at least 0.9) and the longest wait for
// one answer under attack.
//
//	go test -run '^$' -bench HalfFrameAttack -benchtime 1x ./remoting
func BenchmarkHalfFrameAttack(b *testing.B) {
	const (
		attackers = 20
		announced = 15 << 20
		window    = 2 * time.Second
	)
	mux := NewMux()
	mux.RegisterFunc(testCodeEcho, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		return req.NewResponse(CodeSuccess, ""), nil
	})
	srv, err := NewServer(mux, Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.String()
	cl, err := Dial(context.Background(), addr, ClientOptions{Options: Options{Logger: quietLogger()}})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	body := make([]byte, 1024)
	produce := func() (rate float64, maxWait time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		start, n := time.Now(), 0
		for ctx.Err() == nil {
			t0 := time.Now()
			resp, err := cl.Invoke(ctx, NewRequest(testCodeEcho, body))
			if err == nil && resp.Code == CodeSuccess {
				n++
			}
			maxWait = max(maxWait, time.Since(t0))
		}
		return float64(n) / time.Since(start).Seconds(), maxWait
	}
	for range b.N {
		calm, _ := produce()
		hdr := binary.BigEndian.AppendUint32(nil, announced)
		hdr = binary.BigEndian.AppendUint32(hdr, 0)
		half := append(hdr, make([]byte, announced/2)...)
		var conns []net.Conn
		for range attackers {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, nc)
			go func() { _, _ = nc.Write(half) }()
		}
		// Let the half frames arrive (loopback: well under a second).
		time.Sleep(500 * time.Millisecond)
		attacked, wait := produce()
		for _, nc := range conns {
			_ = nc.Close()
		}
		b.ReportMetric(calm, "unattacked-req/s")
		b.ReportMetric(attacked, "attacked-req/s")
		b.ReportMetric(attacked/calm, "ratio")
		b.ReportMetric(float64(wait.Milliseconds()), "max-wait-ms")
	}
}
