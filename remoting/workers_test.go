package remoting

import (
	"context"
	"sync"
	"testing"

	"github.com/jonboulle/clockwork"
)

// A burst of concurrent slow requests starts up to MaxConcurrentRequests
// workers; once the connection idles, only coreWorkers stay.
func TestExtraWorkersExitWhenIdle(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	mux := NewMux()
	mux.RegisterFunc(testCodeEcho+1, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		started.Done()
		<-release
		return req.NewResponse(CodeSuccess, ""), nil
	})
	clock := clockwork.NewFakeClock()
	exited := make(chan struct{}, 16)
	srv, addr, _ := testServer(t, mux, Options{MaxConcurrentRequests: 16, Clock: clock,
		onWorkerExit: func() { exited <- struct{}{} }})
	cl := dial(t, addr, nil)
	ctx := testCtx(t)
	var done sync.WaitGroup
	started.Add(16)
	for range 16 {
		done.Add(1)
		go func() {
			defer done.Done()
			if _, err := cl.Invoke(ctx, NewRequest(testCodeEcho+1, nil)); err != nil {
				t.Error(err)
			}
		}()
	}
	started.Wait() // 16 handlers run at once: 16 workers
	c := srv.Conns()[0]
	if n := c.workers.Load(); n != 16 {
		t.Fatalf("%d workers for 16 concurrent requests", n)
	}
	close(release)
	done.Wait()
	// The 12 extra workers wait on their idle timers (beside the reaper's
	// ticker); all 16 are still there.
	if err := clock.BlockUntilContext(ctx, 16-coreWorkers+1); err != nil {
		t.Fatal(err)
	}
	if n := c.workers.Load(); n != 16 {
		t.Fatalf("%d workers before the idle time passed, want 16", n)
	}
	clock.Advance(extraWorkerIdle)
	for range 16 - coreWorkers {
		select {
		case <-exited:
		case <-ctx.Done():
			t.Fatalf("%d workers after the idle time, want %d", c.workers.Load(), coreWorkers)
		}
	}
	if n := c.workers.Load(); n != coreWorkers {
		t.Fatalf("%d workers left on an idle connection, want %d", n, coreWorkers)
	}
}
