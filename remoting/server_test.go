package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testCodeEcho int32 = 1000

// testServer starts a server on 127.0.0.1 with an echo handler at
// testCodeEcho plus mux's handlers; OnClose reasons arrive on the returned
// channel.
func testServer(t *testing.T, mux *Mux, opts Options) (*Server, string, <-chan error) {
	t.Helper()
	if mux == nil {
		mux = NewMux()
	}
	mux.RegisterFunc(testCodeEcho, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		resp := req.NewResponse(CodeSuccess, "")
		resp.ExtFields = req.ExtFields
		resp.Body = req.Body
		return resp, nil
	})
	closed := make(chan error, 1024)
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	opts.OnClose = func(_ *Conn, reason error) { closed <- reason }
	srv, err := NewServer(mux, opts)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, addr.String(), closed
}

func dial(t *testing.T, addr string, h Handler) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := Dial(ctx, addr, ClientOptions{Options: Options{Logger: quietLogger()}, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// echo does one request/response and checks the answer matches.
func echo(ctx context.Context, cl *Client, i int) error {
	req := NewRequest(testCodeEcho, []byte("body-"+strconv.Itoa(i)))
	req.SetExtInt("i", int64(i))
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		return err
	}
	if got := resp.ExtFields["i"]; resp.Code != CodeSuccess || got != strconv.Itoa(i) ||
		string(resp.Body) != "body-"+strconv.Itoa(i) || !resp.IsResponse() {
		return fmt.Errorf("request %d answered with %v", i, resp)
	}
	return nil
}

func waitReason(t *testing.T, closed <-chan error, want error) {
	t.Helper()
	select {
	case r := <-closed:
		if !errors.Is(r, want) {
			t.Fatalf("connection closed with %v, want %v", r, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("connection not closed; want %v", want)
	}
}

// expectServerClose reads from a raw connection until the server closes it.
func expectServerClose(t *testing.T, nc net.Conn, within time.Duration) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("server did not close the connection within %v", within)
	}
}

func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

func TestRequestResponseOpaqueMatching(t *testing.T) {
	_, addr, _ := testServer(t, nil, Options{})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- echo(ctx, cl, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestOnewayGetsNoResponse(t *testing.T) {
	mux := NewMux()
	got := make(chan *RemotingCommand, 1)
	mux.RegisterFunc(CodeUpdateConsumerOffset, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		got <- req
		return req.NewResponse(CodeSuccess, "dropped: one-way"), nil
	})
	_, addr, _ := testServer(t, mux, Options{})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)
	if err := cl.InvokeOneway(ctx, NewRequest(CodeUpdateConsumerOffset, nil)); err != nil {
		t.Fatal(err)
	}
	if req := <-got; !req.IsOneway() {
		t.Fatalf("request %v lacks the one-way flag", req)
	}
	if err := echo(ctx, cl, 1); err != nil { // ordered after the one-way request
		t.Fatal(err)
	}
	// The client counts a response before handing it to Invoke, and the
	// server answers in order: only the echo was answered.
	if s := cl.Stats(); s.Responses != 1 || s.UnmatchedResponses != 0 {
		t.Fatalf("client stats %+v: the one-way request was answered", s)
	}
}

func TestUnknownCodeNotSupported(t *testing.T) {
	_, addr, _ := testServer(t, nil, Options{})
	cl := dial(t, addr, nil)
	resp, err := cl.Invoke(testCtx(t), NewRequest(999, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != CodeRequestCodeNotSupported || !strings.Contains(resp.Remark, "999") {
		t.Fatalf("got %v, want code 3 naming 999", resp)
	}
}

func TestHandlerErrorAndPanic(t *testing.T) {
	mux := NewMux()
	mux.RegisterFunc(1, func(context.Context, *Conn, *RemotingCommand) (*RemotingCommand, error) {
		return nil, errors.New("disk on fire")
	})
	mux.RegisterFunc(2, func(context.Context, *Conn, *RemotingCommand) (*RemotingCommand, error) {
		panic("bug")
	})
	srv, addr, _ := testServer(t, mux, Options{})
	cl := dial(t, addr, nil)
	for code, want := range map[int32]string{1: "disk on fire", 2: "panicked"} {
		resp, err := cl.Invoke(testCtx(t), NewRequest(code, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != CodeSystemError || !strings.Contains(resp.Remark, want) {
			t.Fatalf("code %d: got %v, want SYSTEM_ERROR with %q", code, resp, want)
		}
	}
	if err := echo(testCtx(t), cl, 7); err != nil {
		t.Fatal(err)
	}
	if n := srv.Stats().HandlerErrors; n != 2 {
		t.Fatalf("HandlerErrors = %d, want 2", n)
	}
}

// A held request (long polling) is answered later with the original opaque.
func TestDeferredResponse(t *testing.T) {
	mux := NewMux()
	held := make(chan func(), 1)
	mux.RegisterFunc(CodePullMessage, func(_ context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		held <- func() {
			resp := req.NewResponse(CodeSuccess, "late")
			if err := conn.WriteResponse(resp); err != nil {
				t.Error(err)
			}
		}
		return nil, nil
	})
	_, addr, _ := testServer(t, mux, Options{})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)
	done := make(chan *RemotingCommand, 1)
	go func() {
		resp, err := cl.Invoke(ctx, NewRequest(CodePullMessage, nil))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	answer := <-held
	if err := echo(ctx, cl, 1); err != nil { // the connection is not blocked
		t.Fatal(err)
	}
	answer()
	if resp := <-done; resp == nil || resp.Remark != "late" {
		t.Fatalf("got %v, want the late answer", resp)
	}
}

// The server can notify a client one-way (NOTIFY_CONSUMER_IDS_CHANGED) and
// invoke it with a response.
func TestServerInitiatedRequests(t *testing.T) {
	mux := NewMux()
	conns := make(chan *Conn, 1)
	mux.RegisterFunc(CodeHeartBeat, func(_ context.Context, conn *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		conns <- conn
		return req.NewResponse(CodeSuccess, ""), nil
	})
	_, addr, _ := testServer(t, mux, Options{})
	clientMux := NewMux()
	notified := make(chan *RemotingCommand, 1)
	clientMux.RegisterFunc(CodeNotifyConsumerIDsChanged, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		notified <- req
		return nil, nil
	})
	clientMux.RegisterFunc(CodeGetConsumerRunningInfo, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		return req.NewResponse(CodeSuccess, "running"), nil
	})
	cl := dial(t, addr, clientMux)
	ctx := testCtx(t)
	if _, err := cl.Invoke(ctx, NewRequest(CodeHeartBeat, nil)); err != nil {
		t.Fatal(err)
	}
	conn := <-conns
	n := NewRequest(CodeNotifyConsumerIDsChanged, nil)
	n.SetExt("consumerGroup", "g")
	if err := conn.InvokeOneway(ctx, n); err != nil {
		t.Fatal(err)
	}
	if got := <-notified; !got.IsOneway() || got.ExtFields["consumerGroup"] != "g" {
		t.Fatalf("client got %v", got)
	}
	resp, err := conn.Invoke(ctx, NewRequest(CodeGetConsumerRunningInfo, nil))
	if err != nil || resp.Remark != "running" {
		t.Fatalf("server invoke: %v, %v", resp, err)
	}
}

// A request in the ROCKETMQ binary encoding is answered in it.
func TestBinaryRequestAnsweredInBinary(t *testing.T) {
	_, addr, _ := testServer(t, nil, Options{})
	nc := rawDial(t, addr)
	req := NewRequest(testCodeEcho, []byte("b"))
	req.SerializeType = SerializeRocketMQ
	req.SetExt("i", "5")
	frame, err := req.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := ReadFrame(nc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if resp.SerializeType != SerializeRocketMQ || resp.Opaque != req.Opaque || resp.ExtFields["i"] != "5" {
		t.Fatalf("got %v (%v)", resp, resp.SerializeType)
	}
}

func TestHalfFrameDroppedAfterIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	srv, addr, closed := testServer(t, nil, Options{IdleTimeout: idle})
	good := dial(t, addr, nil)
	nc := rawDial(t, addr)
	frame, _ := NewRequest(testCodeEcho, nil).MarshalFrame()
	start := time.Now()
	if _, err := nc.Write(frame[:len(frame)/2]); err != nil {
		t.Fatal(err)
	}
	if err := echo(testCtx(t), good, 1); err != nil {
		t.Fatal(err)
	}
	expectServerClose(t, nc, 10*time.Second)
	if el := time.Since(start); el < idle/2 {
		t.Fatalf("dropped after %v, before the idle timeout %v", el, idle)
	}
	waitReason(t, closed, ErrIdleTimeout)
	if n := srv.Stats().IdleTimeouts; n < 1 { // the good client idles out too
		t.Fatalf("IdleTimeouts = %d, want >= 1", n)
	}
}

func TestOversizeFrameRejected(t *testing.T) {
	srv, addr, closed := testServer(t, nil, Options{MaxFrameSize: 1024})
	nc := rawDial(t, addr)
	if _, err := nc.Write(binary.BigEndian.AppendUint32(nil, 2048)); err != nil {
		t.Fatal(err)
	}
	expectServerClose(t, nc, 10*time.Second)
	waitReason(t, closed, ErrFrameTooLarge)
	if n := srv.Stats().FramesTooLarge; n != 1 {
		t.Fatalf("FramesTooLarge = %d", n)
	}
}

// A client that sends requests but never reads is disconnected when its
// write queue fills, while another client keeps working.
func TestNonReaderDisconnected(t *testing.T) {
	mux := NewMux()
	big := make([]byte, 256<<10)
	mux.RegisterFunc(CodePullMessage, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		resp := req.NewResponse(CodeSuccess, "")
		resp.Body = big
		return resp, nil
	})
	srv, addr, closed := testServer(t, mux, Options{WriteQueueLen: 4, WriteQueueBytes: 1 << 20})
	good := dial(t, addr, nil)
	nc := rawDial(t, addr)
	_ = nc.(*net.TCPConn).SetReadBuffer(4 << 10)
	frame, _ := NewRequest(CodePullMessage, nil).MarshalFrame()
	ctx := testCtx(t)
	go func() { // 400 × 256 KiB = 100 MiB of answers: far beyond socket buffers
		for range 400 {
			if _, err := nc.Write(frame); err != nil {
				return
			}
		}
	}()
	for i := range 20 {
		if err := echo(ctx, good, i); err != nil {
			t.Fatal(err)
		}
	}
	waitReason(t, closed, ErrWriteQueueFull)
	for i := range 20 {
		if err := echo(ctx, good, i); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Stats().WriteQueueOverflows; n != 1 {
		t.Fatalf("WriteQueueOverflows = %d", n)
	}
}

func TestMaxConns(t *testing.T) {
	srv, addr, _ := testServer(t, nil, Options{MaxConns: 1})
	good := dial(t, addr, nil)
	if err := echo(testCtx(t), good, 1); err != nil {
		t.Fatal(err)
	}
	extra := rawDial(t, addr)
	expectServerClose(t, extra, 10*time.Second)
	if n := srv.Stats().ConnsRejected; n != 1 {
		t.Fatalf("ConnsRejected = %d", n)
	}
}

func TestOnCloseAndClientClose(t *testing.T) {
	srv, addr, closed := testServer(t, nil, Options{})
	cl := dial(t, addr, nil)
	if err := echo(testCtx(t), cl, 1); err != nil {
		t.Fatal(err)
	}
	_ = cl.Close()
	waitReason(t, closed, io.EOF)
	if _, err := cl.Invoke(testCtx(t), NewRequest(testCodeEcho, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Invoke after Close: %v", err)
	}
	if n := srv.Stats().ConnsOpen; n != 0 {
		t.Fatalf("ConnsOpen = %d", n)
	}
}

// Shutdown lets in-flight requests finish and answers them, refuses new
// connections, and then closes.
func TestShutdownWithInFlightRequests(t *testing.T) {
	mux := NewMux()
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	mux.RegisterFunc(CodeSendMessage, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		started <- struct{}{}
		<-release
		return req.NewResponse(CodeSuccess, "stored"), nil
	})
	srv, addr, _ := testServer(t, mux, Options{})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var answered atomic.Int32
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cl.Invoke(ctx, NewRequest(CodeSendMessage, nil))
			if err != nil || resp.Remark != "stored" {
				t.Errorf("in-flight request: %v, %v", resp, err)
				return
			}
			answered.Add(1)
		}()
	}
	for range 10 {
		<-started
	}
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	// New connections are refused once Shutdown has started.
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		_ = nc.Close()
	}
	close(release)
	wg.Wait()
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if answered.Load() != 10 {
		t.Fatalf("%d of 10 in-flight requests answered", answered.Load())
	}
	<-cl.Conn().Done()
	if _, err := srv.Listen("127.0.0.1:0"); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Listen after Shutdown: %v", err)
	}
}

// When Shutdown's context ends first, it forces Close: handler contexts are
// canceled and every goroutine exits.
func TestShutdownTimeoutForcesClose(t *testing.T) {
	mux := NewMux()
	started := make(chan struct{})
	mux.RegisterFunc(CodeSendMessage, func(ctx context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv, addr, _ := testServer(t, mux, Options{})
	cl := dial(t, addr, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(testCtx(t), NewRequest(CodeSendMessage, nil))
		errc <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	if err := <-errc; !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Invoke = %v, want ErrConnClosed", err)
	}
}
