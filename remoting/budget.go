package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// byteBudget caps the bytes a server holds in incoming frames, across all
// its connections: the payload buffers of frames being received and of
// requests whose handlers have not returned. A reader that needs more than
// is left waits, in arrival order, until other frames release theirs, and
// gives up after a bounded wait (the connection is then closed). Without
// it, N peers that each announce a large frame and send half of it make the
// server hold N half-frames (64 × 7.5 MiB raised serve's RSS to 0.7 GiB).
type byteBudget struct {
	max  int64
	wait time.Duration

	mu      sync.Mutex
	used    int64
	waiters []*budgetWaiter // FIFO: a large request is not starved by small ones
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n was granted
}

func newByteBudget(max int64, wait time.Duration) *byteBudget {
	return &byteBudget{max: max, wait: wait}
}

// acquire takes n bytes, waiting at most b.wait (or until ctx is done).
// n must not exceed b.max.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.max {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	used := b.used
	b.mu.Unlock()
	t := time.NewTimer(b.wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		err = fmt.Errorf("%w: %d bytes wanted, %d of %d in use by other frames for %v",
			ErrReceiveBudget, n, used, b.max, b.wait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while we gave up: hand it back
		b.releaseLocked(n)
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
		b.grantLocked() // the head may have changed
	}
	return err
}

// release returns n bytes and wakes the waiters that now fit.
func (b *byteBudget) release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.releaseLocked(n)
	b.mu.Unlock()
}

func (b *byteBudget) releaseLocked(n int64) {
	b.used -= n
	b.grantLocked()
}

func (b *byteBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.max {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse returns the bytes currently held.
func (b *byteBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// ErrReceiveBudget is the reason a connection was closed because the
// server's bytes for incoming frames (Options.MaxReceiveBytes) stayed in use
// by other frames for Options.ReceiveBudgetWait.
var ErrReceiveBudget = errors.New("remoting: receive buffer budget exhausted")

// readPayloadBudget is readPayload charging every byte of the payload buffer
// to budget before it is allocated. It returns the payload and the bytes
// charged for it, which the caller releases once the frame is no longer
// used; on error nothing stays charged.
func readPayloadBudget(ctx context.Context, r io.Reader, maxFrameSize int, budget *byteBudget) ([]byte, int64, error) {
	length, err := readLength(r)
	if err != nil {
		return nil, 0, err
	}
	n, err := checkLength(int32(length), maxFrameSize)
	if err != nil {
		return nil, 0, err
	}
	size := min(n, readChunk)
	if err := budget.acquire(ctx, int64(size)); err != nil {
		return nil, 0, err
	}
	buf := make([]byte, size)
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			budget.release(int64(len(buf)))
			return nil, 0, err
		}
		if got == n {
			return buf, int64(len(buf)), nil
		}
		// Both buffers are live during the copy: charge the new one
		// before allocating it, release the old one after.
		next := min(2*len(buf), n)
		if err := budget.acquire(ctx, int64(next)); err != nil {
			budget.release(int64(len(buf)))
			return nil, 0, err
		}
		grown := make([]byte, next)
		copy(grown, buf[:got])
		budget.release(int64(len(buf)))
		buf = grown
	}
}
