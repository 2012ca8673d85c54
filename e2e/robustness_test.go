package e2e

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// garbage returns one of several kinds of hostile input.
func garbage(r *rand.Rand) []byte {
	frame := func(hdr, body []byte, serialize byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)+len(body)))
		b = binary.BigEndian.AppendUint32(b, uint32(serialize)<<24|uint32(len(hdr)))
		return append(append(b, hdr...), body...)
	}
	switch r.IntN(8) {
	case 0: // random bytes
		b := make([]byte, 1+r.IntN(4096))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 1: // announces 16 MiB, sends a few bytes, stalls
		return []byte{0x00, 0xff, 0xff, 0xf0, 0, 0, 0, 10, '{'}
	case 2: // negative length
		return []byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0}
	case 3: // bad JSON header
		return frame([]byte(`{"code":10,"extFields":{`), nil, 0)
	case 4: // unknown code
		return frame([]byte(`{"code":9999,"opaque":1,"flag":0}`), nil, 0)
	case 5: // known codes with missing or bad fields
		codes := []int{10, 11, 12, 14, 15, 17, 29, 30, 31, 33, 34, 36, 38, 41, 42, 105, 215, 310, 320}
		c := codes[r.IntN(len(codes))]
		hdr := `{"code":` + strconv.Itoa(c) + `,"opaque":7,"flag":0,"extFields":{"topic":"T","queueId":"x","a":"g","b":"%%%","offset":"-5"}}`
		return frame([]byte(hdr), []byte(`{"clientID":`), 0)
	case 6: // bad binary header
		return frame([]byte{0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, nil, 1)
	default: // a batch with inconsistent lengths
		body := []byte{0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0}
		hdr := `{"code":320,"opaque":9,"flag":0,"extFields":{"a":"g","b":"TopicGarbage","c":"TBW102","d":"4","e":"0","f":"0","g":"0","h":"0"}}`
		return frame([]byte(hdr), body, 0)
	}
}

// Hundreds of connections feed garbage while a real producer and consumer
// keep working: every acknowledged message is consumed, and the server
// neither crashes nor keeps the garbage connections' goroutines.
//
// Not parallel: the goroutine check counts the whole process, so no other
// test may run beside it (Go starts the parallel tests only after the
// sequential ones).
func TestGarbageConnectionsDoNotDisturbClients(t *testing.T) {
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	before := runtime.NumGoroutine()
	p := newProducer(t, n.Addr)
	sendN(t, p, "TopicUnderAttack", 0, 1, "")
	col, c := collect(t, consumerOpts(n.Addr, "GroupUnderAttack"), "TopicUnderAttack", consumer.MessageSelector{})
	defer c.Shutdown()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	const conns = 300
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 42))
			for {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := net.DialTimeout("tcp", n.BrokerAddr, time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				_ = nc.SetDeadline(time.Now().Add(300 * time.Millisecond))
				for range 1 + r.IntN(3) {
					if _, err := nc.Write(garbage(r)); err != nil {
						break
					}
				}
				// Some read the answers, some never read, some stall.
				if r.IntN(2) == 0 {
					buf := make([]byte, 4096)
					_, _ = nc.Read(buf)
				}
				select {
				case <-stop:
				case <-time.After(time.Duration(r.IntN(200)) * time.Millisecond):
				}
				_ = nc.Close()
			}
		}()
	}
	const total = 500
	var acked []string
	start := time.Now() // keep the attack on for at least 2 s
	for i := 1; i <= total || time.Since(start) < 2*time.Second; i++ {
		m := primitive.NewMessage("TopicUnderAttack", []byte("payload"))
		m.WithProperty("seq", strconv.Itoa(i))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Errorf("send %d under attack: %v", i, err)
			continue
		}
		acked = append(acked, strconv.Itoa(i))
	}
	ok := col.waitFor(t, 30*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return !slices.ContainsFunc(acked, func(k string) bool { return len(col.msgs[k]) == 0 })
	})
	close(stop)
	wg.Wait()
	if !ok {
		t.Fatalf("consumed %d of %d acknowledged", col.distinct(), len(acked))
	}
	st := n.Server.RemotingStats()
	t.Logf("server stats: %+v", st)
	if st.BadFrames == 0 || st.ConnsAccepted < conns {
		t.Errorf("the garbage did not reach the server: %+v", st)
	}
	// The garbage connections are gone, and so are their goroutines. The
	// producer and the consumer keep two connections each (the client's
	// name-server and broker connections are separate).
	deadline := time.Now().Add(10 * time.Second)
	for n.Server.RemotingStats().ConnsOpen > 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if open := n.Server.RemotingStats().ConnsOpen; open > 4 {
		t.Errorf("%d connections still open", open)
	}
	// Closed connections' goroutines may still be returning: poll.
	g := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); g > before+200 && time.Now().Before(deadline); g = runtime.NumGoroutine() {
		time.Sleep(50 * time.Millisecond)
	}
	if g > before+200 {
		t.Errorf("%d goroutines, %d before the attack", g, before)
	}
}
