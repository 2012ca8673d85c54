package pop

import (
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/hooks"
)

// BenchmarkReceiveWithManyInFlight receives and acks one message at a
// time while 4096 messages of the queue are in flight (received, not
// acked, invisible for an hour): a receive must not pay for the
// in-flight messages none of which is due.
//
//	go test ./broker/pop -run '^$' -bench ReceiveWithManyInFlight
func BenchmarkReceiveWithManyInFlight(b *testing.B) {
	e := newEnv(b, hooks.Pop{})
	const inFlight = 4096
	for range inFlight {
		e.send(0, "held", "")
	}
	for got := 0; got < inFlight; {
		got += len(e.receive(0, 32, time.Hour, false))
	}
	b.ResetTimer()
	for range b.N {
		e.send(0, "new", "")
		ms := e.receive(0, 1, time.Hour, false)
		if len(ms) != 1 {
			b.Fatalf("received %d messages", len(ms))
		}
		if err := e.svc.Ack(context.Background(), testGroup, testTopic, ms[0].Handle.String()); err != nil {
			b.Fatal(err)
		}
	}
}
