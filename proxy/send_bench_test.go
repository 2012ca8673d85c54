package proxy_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// BenchmarkSendMessage sends SendMessage calls of one message (as the
// 5.x clients send) and of 32, 64 calls in flight over one connection, to
// a proxy on an in-memory store, and reports the process's CPU time a
// message (client and server together): the gap between the two is the
// per-call cost of gRPC. Profile it for the server's share:
//
//	go test ./proxy -run '^$' -bench SendMessage -cpuprofile cpu.out
func BenchmarkSendMessage(b *testing.B) {
	for _, per := range []int{1, 32} {
		b.Run(fmt.Sprint(per, "-a-call"), func(b *testing.B) {
			e := newEnv(b, nil)
			ctx := ctxT(b)
			body := make([]byte, 128)
			b.SetParallelism(64)
			cpu0 := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					req := &rmqpb.SendMessageRequest{}
					for range per {
						i++
						m := msg("T", fmt.Sprintf("B%016X", i))
						m.Body = body
						req.Messages = append(req.Messages, m)
					}
					r, err := e.cl.SendMessage(ctx, req)
					if err != nil || r.GetStatus().GetCode() != rmqpb.Code_OK {
						b.Error(r.GetStatus(), err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N*per), "cpu-µs/msg")
		})
	}
}

// cpuTime is the CPU time the process has used (user + system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
