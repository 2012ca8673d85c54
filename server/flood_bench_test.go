package server_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// BenchmarkFloodVictimLatency measures a well-behaved client's send
// latency (one send at a time, 200 a second) while another client floods
// the server from 4 connections with 32 senders each, as fast as the
// server answers: without limits, and with a per-connection rate limit of
// 400 requests/s plus the fair in-flight limit. Both variants run in one
// process, side by side; compare their p99-µs. The limits protect only
// when set below what the machine can serve (the flood's flood-ok/s
// without limits shows that).
//
//	go test -run '^$' -bench FloodVictimLatency -benchtime 1000x ./server
func BenchmarkFloodVictimLatency(b *testing.B) {
	for _, v := range []struct {
		name   string
		limits server.Limits
	}{
		{"limits=off", server.Limits{}},
		{"limits=on", server.Limits{ConnRequestRate: 400, ConnRequestBurst: 100, MaxInFlight: 16}},
	} {
		b.Run(v.name, func(b *testing.B) { benchFlood(b, v.limits) })
	}
}

func benchFlood(b *testing.B, limits server.Limits) {
	e := newEnv(b, func(bc *broker.Config, sc *server.Config) {
		bc.Store.CommitLogFileSize = 64 << 20
		sc.Security.Limits = limits
	})
	e.send("Victim", 0, "warm", "")
	e.send("Flood", 0, "warm", "")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var flooded, busy atomic.Int64
	body := make([]byte, 1024)
	for range 4 {
		cl := e.dial(nil)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req := sendRequest("Flood", body)
					resp, err := cl.Invoke(ctx, req)
					switch {
					case err != nil:
					case resp.Code == remoting.CodeSystemBusy:
						busy.Add(1)
					default:
						flooded.Add(1)
					}
				}
			}()
		}
		defer cl.Close()
	}
	time.Sleep(200 * time.Millisecond) // let the flood build up
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	for range b.N {
		<-pace.C
		t0 := time.Now()
		resp, err := e.cl.Invoke(context.Background(), sendRequest("Victim", []byte("hello")))
		if err != nil || resp.Code != remoting.CodeSuccess {
			cancel()
			wg.Wait()
			b.Fatalf("victim send: %v %v", err, resp)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(flooded.Load())/elapsed.Seconds(), "flood-ok/s")
	b.ReportMetric(float64(busy.Load())/elapsed.Seconds(), "flood-busy/s")
}

func sendRequest(topic string, body []byte) *remoting.RemotingCommand {
	req := remoting.NewRequest(remoting.CodeSendMessageV2, body)
	for i, kv := 0, sendKV(topic); i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	return req
}
