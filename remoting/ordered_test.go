package remoting

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Requests Options.Ordered picks are served one at a time in the order
// they were read, even when many arrive in one segment, and while one of
// them waits the connection goes on reading and serving the rest: an echo
// sent behind a blocked ordered request is answered before it. Closing
// the connection with ordered requests queued ends their goroutine
// (goleak in TestMain).
func TestOrderedRequests(t *testing.T) {
	const codeOrdered int32 = 2010
	mux := NewMux()
	var mu sync.Mutex
	var order []int64
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	mux.RegisterFunc(codeOrdered, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		i, _ := strconv.ParseInt(req.ExtFields["i"], 10, 64)
		if i == 0 {
			<-release
		}
		mu.Lock()
		order = append(order, i)
		mu.Unlock()
		return req.NewResponse(CodeSuccess, ""), nil
	})
	ordered := func(req *RemotingCommand) bool { return req.Code == codeOrdered }
	_, addr, _ := testServer(t, mux, Options{Ordered: ordered})
	t.Cleanup(unblock) // runs before the server's Close, which waits for the handler
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}

	// Request 0 blocks; 1..n queue behind it (fewer than orderedQueueLen,
	// beyond which the reader would wait); the echo goes to a worker.
	const n = orderedQueueLen / 2
	var frames []byte
	for i := range int64(n + 1) {
		req := NewRequest(codeOrdered, nil)
		req.SetExtInt("i", i)
		if frames, err = req.AppendFrame(frames); err != nil {
			t.Fatal(err)
		}
	}
	e := NewRequest(testCodeEcho, nil)
	if frames, err = e.AppendFrame(frames); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frames); err != nil {
		t.Fatal(err)
	}
	resp, err := ReadFrame(nc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Opaque != e.Opaque {
		t.Fatalf("first answer is for opaque %d, want the echo's %d (ordered request 0 is still blocked)", resp.Opaque, e.Opaque)
	}
	unblock()
	for range n + 1 {
		if _, err := ReadFrame(nc, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != n+1 {
		t.Fatalf("%d ordered requests served, want %d", len(order), n+1)
	}
	for k, i := range order {
		if i != int64(k) {
			t.Fatalf("ordered requests served as %v, want 0..%d in order", order, n)
		}
	}
}

// A connection that closes while ordered requests are queued behind a
// blocked one serves or drops them and ends its ordered goroutine; the
// server's Close then returns (goleak in TestMain checks the goroutine).
func TestOrderedRequestsQueuedAtClose(t *testing.T) {
	const codeOrdered int32 = 2011
	mux := NewMux()
	started := make(chan struct{}, 1)
	mux.RegisterFunc(codeOrdered, func(ctx context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done() // the connection's context: canceled when it closes
		return req.NewResponse(CodeSuccess, ""), nil
	})
	srv, addr, closed := testServer(t, mux, Options{Ordered: func(req *RemotingCommand) bool { return req.Code == codeOrdered }})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var frames []byte
	for range 10 {
		if frames, err = NewRequest(codeOrdered, nil).AppendFrame(frames); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nc.Write(frames); err != nil {
		t.Fatal(err)
	}
	<-started
	_ = nc.Close()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not finish after its peer closed")
	}
	_ = srv.Close()
}
