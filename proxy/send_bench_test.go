package proxy_test

import (
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// BenchmarkSendMessage sends one-message SendMessage calls, 64 in flight
// over one connection, to a proxy on an in-memory store: the gRPC send
// path's cost, client included (profile it for the server's share):
//
//	go test ./proxy -run '^$' -bench SendMessage -cpuprofile cpu.out
func BenchmarkSendMessage(b *testing.B) {
	e := newEnv(b, nil)
	ctx := ctxT(b)
	body := make([]byte, 128)
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			m := msg("T", fmt.Sprintf("B%016X", i))
			m.Body = body
			r, err := e.cl.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{m}})
			if err != nil || r.GetStatus().GetCode() != rmqpb.Code_OK {
				b.Error(r, err)
				return
			}
		}
	})
}
