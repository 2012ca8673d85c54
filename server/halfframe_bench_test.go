package server_test

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// BenchmarkHalfFrameAttackSend measures what a half-frame attack costs
// well-behaved producers on the broker's send path, with the server's
// default remoting Options. Calm windows (4 producers, each sending
// 256-byte messages one at a time, 2 s) alternate with b.N attacked
// windows: the same producers while 20 connections that have sent no
// valid request each announce a 15 MiB frame, send half of it and stall.
// All windows run in one process, so that they see the same machine; each
// attacked window is compared with the mean of the calm windows around
// it. It reports the median calm and attacked msgs/s, the min, median and
// max over the rounds of attacked ÷ calm (the target is at least 0.9),
// and the longest wait for one answer under attack.
//
//	go test -run '^$' -bench HalfFrameAttackSend -benchtime 5x ./server
func BenchmarkHalfFrameAttackSend(b *testing.B) {
	const (
		producers = 4
		attackers = 20
		announced = 15 << 20
		window    = 2 * time.Second
	)
	e := newEnv(b, func(bc *broker.Config, _ *server.Config) { bc.Store.CommitLogFileSize = 64 << 20 })
	e.send("Victim", 0, "warm", "")
	clients := make([]*remoting.Client, producers)
	for i := range clients {
		clients[i] = e.dial(nil)
		defer clients[i].Close()
	}
	body := make([]byte, 256)
	// produce runs the producers for one window and returns the acked
	// msgs/s and the longest wait for an answer.
	produce := func() (rate float64, maxWait time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		var acked, longest atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					t0 := time.Now()
					resp, err := cl.Invoke(ctx, sendRequest("Victim", body))
					if err == nil && resp.Code == remoting.CodeSuccess {
						acked.Add(1)
					}
					d := int64(time.Since(t0))
					for old := longest.Load(); d > old && !longest.CompareAndSwap(old, d); old = longest.Load() {
					}
				}
			}()
		}
		wg.Wait()
		return float64(acked.Load()) / time.Since(start).Seconds(), time.Duration(longest.Load())
	}
	var held []float64 // MiB the server holds for the attackers, each round
	hdr := binary.BigEndian.AppendUint32(nil, announced)
	hdr = binary.BigEndian.AppendUint32(hdr, 0)
	half := append(hdr, make([]byte, announced/2)...)
	attack := func() []net.Conn {
		conns := make([]net.Conn, attackers)
		for i := range conns {
			nc, err := net.Dial("tcp", e.adr)
			if err != nil {
				b.Fatal(err)
			}
			conns[i] = nc
			go func() { _, _ = nc.Write(half) }()
		}
		held = append(held, float64(settle(e.s))/(1<<20))
		return conns
	}
	var calm, attacked, ratios []float64
	var worst time.Duration
	b.ResetTimer()
	before, _ := produce()
	calm = append(calm, before)
	for range b.N {
		conns := attack()
		a, wait := produce()
		for _, nc := range conns {
			_ = nc.Close()
		}
		after, _ := produce()
		// The calm windows on both sides of the attacked one: load from
		// outside the benchmark drifts, and this cancels its trend.
		calm, attacked = append(calm, after), append(attacked, a)
		ratios = append(ratios, a/((before+after)/2))
		before = after
		worst = max(worst, wait)
	}
	b.StopTimer()
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(calm), "calm-msgs/s")
	b.ReportMetric(med(attacked), "attacked-msgs/s")
	b.ReportMetric(slices.Min(ratios), "ratio-min")
	b.ReportMetric(med(slices.Clone(ratios)), "ratio-median")
	b.ReportMetric(slices.Max(ratios), "ratio-max")
	b.ReportMetric(float64(worst.Milliseconds()), "max-wait-ms")
	b.ReportMetric(med(held), "attack-held-MiB")
}

// settle waits until the attackers' half frames have reached the server:
// its held receive bytes stop growing for 100 ms (at most 2 s; loopback
// takes well under that). It returns the bytes held then.
func settle(s *server.Server) int64 {
	deadline := time.Now().Add(2 * time.Second)
	last, since := int64(-1), time.Now()
	for time.Now().Before(deadline) {
		held := s.RemotingStats().ReceiveBytesInUse
		if held != last {
			last, since = held, time.Now()
		} else if held > 0 && time.Since(since) >= 100*time.Millisecond {
			return held
		}
		time.Sleep(10 * time.Millisecond)
	}
	return last
}
