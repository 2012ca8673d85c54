package remoting

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestByteBudgetFIFOAndTimeout(t *testing.T) {
	clock := clockwork.NewFakeClock()
	const wait = 200 * time.Millisecond
	b := &byteBudget{max: 100, largeMax: 100, strangerMax: 100, wait: wait, clock: clock}
	ctx := testCtx(t)
	if err := b.acquire(ctx, classSmall, 80); err != nil {
		t.Fatal(err)
	}
	// 50 waits (30 would fit, but it queues behind 50: no starvation).
	var wg sync.WaitGroup
	order := make(chan int64, 2)
	for i, n := range []int64{50, 10} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.acquire(ctx, classSmall, n); err != nil {
				t.Error(err)
				return
			}
			order <- n
		}()
		// A waiter starts its timer once queued: 50 queues first.
		if err := clock.BlockUntilContext(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.inUse(); got != 80 || len(order) != 0 {
		t.Fatalf("in use %d, %d granted while both wait; want 80, none (10 fits but queues behind 50)", got, len(order))
	}
	b.release(charge{n: 80, class: classSmall})
	wg.Wait()
	// Nothing fits now beyond 40: a wait for 50 times out with the sentinel
	// after the wait bound, and leaves the count unchanged.
	res := make(chan error, 1)
	go func() { res <- b.acquire(ctx, classSmall, 50) }()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(wait - time.Millisecond)
	select {
	case err := <-res:
		t.Fatalf("acquire gave up before the wait bound: %v", err)
	default:
	}
	clock.Advance(time.Millisecond)
	if err := <-res; !errors.Is(err, ErrReceiveBudget) {
		t.Fatalf("acquire beyond the cap = %v, want ErrReceiveBudget", err)
	}
	if got := b.inUse(); got != 60 {
		t.Fatalf("in use %d after a timed-out wait, want 60", got)
	}
}

// Many peers that each announce a large frame and send half of it: the
// server never holds more than MaxReceiveBytes for them, closes the ones
// that wait too long with ErrReceiveBudget, and serves a well-behaved
// client again once the budget is free.
func TestReceiveBudgetCapsHalfFrames(t *testing.T) {
	const (
		frameMax = 1 << 20
		capBytes = 2 * frameMax
		peers    = 8
	)
	srv, addr, closed := testServer(t, nil, Options{MaxFrameSize: frameMax, MaxReceiveBytes: capBytes,
		ReceiveBudgetWait: 300 * time.Millisecond, IdleTimeout: 3 * time.Second})
	chunk := make([]byte, 64<<10)
	var wg sync.WaitGroup
	for range peers {
		nc := rawDial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := binary.BigEndian.AppendUint32(nil, frameMax-4)
			hdr = binary.BigEndian.AppendUint32(hdr, 0)
			_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(hdr); err != nil {
				return
			}
			for sent := 0; sent < frameMax/2; sent += len(chunk) {
				if _, err := nc.Write(chunk); err != nil {
					return // closed by the server: expected for some
				}
			}
		}()
	}
	// The peers are raw sockets: the server's reaction to their bytes has
	// no event to wait on, so these loops poll its counters (sampling the
	// held bytes on the way) with a deadline.
	deadline := time.Now().Add(10 * time.Second)
	var peak int64
	for srv.Stats().ReceiveBudgetCloses == 0 && time.Now().Before(deadline) {
		peak = max(peak, srv.Stats().ReceiveBytesInUse)
		time.Sleep(time.Millisecond)
	}
	if peak > capBytes {
		t.Fatalf("held %d bytes of incoming frames, cap %d", peak, capBytes)
	}
	waitReason(t, closed, ErrReceiveBudget)
	// Half frames of 512 KiB hold 512 KiB each: at most 4 fit in 2 MiB,
	// so at least 4 of the 8 must have been refused.
	for srv.Stats().ReceiveBudgetCloses < peers-capBytes/(frameMax/2) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.Stats().ReceiveBudgetCloses; n < peers-capBytes/(frameMax/2) {
		t.Fatalf("ReceiveBudgetCloses = %d, want >= %d", n, peers-capBytes/(frameMax/2))
	}
	wg.Wait()
	// The holders are dropped by the idle timeout; then a client works.
	for srv.Stats().ReceiveBytesInUse > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.Stats().ReceiveBytesInUse; n != 0 {
		t.Fatalf("%d bytes still held after every peer was dropped", n)
	}
	if err := echo(testCtx(t), dial(t, addr, nil), 1); err != nil {
		t.Fatal(err)
	}
}

func TestReceiveBudgetOption(t *testing.T) {
	if err := (Options{MaxFrameSize: 1 << 20, MaxReceiveBytes: 1 << 20}).Validate(); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("MaxReceiveBytes below twice MaxFrameSize: %v, want ErrBadOptions", err)
	}
	if err := (Options{MaxReceiveBytes: -1}).Validate(); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("negative MaxReceiveBytes: %v", err)
	}
}
