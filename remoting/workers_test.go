package remoting

import (
	"context"
	"sync"
	"testing"
	"time"
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
	srv, addr, _ := testServer(t, mux, Options{MaxConcurrentRequests: 16})
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
	deadline := time.Now().Add(extraWorkerIdle + 5*time.Second)
	for c.workers.Load() > coreWorkers && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := c.workers.Load(); n != coreWorkers {
		t.Fatalf("%d workers left on an idle connection, want %d", n, coreWorkers)
	}
}
