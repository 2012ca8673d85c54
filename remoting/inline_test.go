package remoting

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// Requests Options.Inline picks are answered on the read goroutine, in
// the order they arrive, with the right opaques, while a slow request
// that went to a worker holds nothing up; a panicking inline handler is
// answered SYSTEM_ERROR and the connection goes on.
func TestInlineRequests(t *testing.T) {
	const codeInline, codeSlow, codePanic int32 = 2000, 2001, 2002
	mux := NewMux()
	var mu sync.Mutex
	var order []int64
	mux.RegisterFunc(codeInline, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		i, _ := strconv.ParseInt(req.ExtFields["i"], 10, 64)
		mu.Lock()
		order = append(order, i)
		mu.Unlock()
		resp := req.NewResponse(CodeSuccess, "")
		resp.SetExtInt("i", i)
		return resp, nil
	})
	release := make(chan struct{})
	mux.RegisterFunc(codeSlow, func(ctx context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		<-release
		return req.NewResponse(CodeSuccess, "slow"), nil
	})
	mux.RegisterFunc(codePanic, func(context.Context, *Conn, *RemotingCommand) (*RemotingCommand, error) {
		panic("inline handler bug")
	})
	inline := func(req *RemotingCommand) bool { return req.Code == codeInline || req.Code == codePanic }
	srv, addr, _ := testServer(t, mux, Options{Inline: inline})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)

	slow := make(chan error, 1)
	go func() {
		resp, err := cl.Invoke(ctx, NewRequest(codeSlow, nil))
		if err == nil && resp.Remark != "slow" {
			err = context.Canceled
		}
		slow <- err
	}()
	// One goroutine sends in order (Invoke waits for each answer), a few
	// others concurrently: every answer carries its own request's i.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				i := int64(g*1000 + k)
				req := NewRequest(codeInline, nil)
				req.SetExtInt("i", i)
				resp, err := cl.Invoke(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if resp.ExtFields["i"] != strconv.FormatInt(i, 10) {
					errs <- context.DeadlineExceeded
					t.Errorf("request %d answered with i=%s", i, resp.ExtFields["i"])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow request answered before it was released: %v", err)
	default:
	}
	resp, err := cl.Invoke(ctx, NewRequest(codePanic, nil))
	if err != nil || resp.Code != CodeSystemError {
		t.Fatalf("panicking inline handler: %v, %v", resp, err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if err := echo(ctx, cl, 1); err != nil { // the echo handler is not inline
		t.Fatal(err)
	}
	// Each sender's requests were handled in the order it sent them.
	mu.Lock()
	defer mu.Unlock()
	last := map[int64]int64{}
	for _, i := range order {
		g := i / 1000
		if prev, ok := last[g]; ok && i <= prev {
			t.Fatalf("sender %d's request %d handled after %d", g, i, prev)
		}
		last[g] = i
	}
	st := srv.Stats()
	if st.InlineRequests != 201 || len(order) != 200 {
		t.Fatalf("InlineRequests = %d, handled %d; want 201 (200 + the panic), 200", st.InlineRequests, len(order))
	}
}
