package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// frameClass is the share of the receive budget a frame draws from.
type frameClass uint8

const (
	// classSmall: a frame of at most Options.LargeFrameSize bytes. Small
	// frames may use the whole budget, and only they use its reserve
	// (Options.SmallFrameReserve), so they never wait behind large ones.
	classSmall frameClass = iota
	// classLarge: a larger frame on a known connection (one that sent a
	// valid request before).
	classLarge
	// classStranger: a frame still arriving on a connection that has sent
	// no valid request yet, larger than the connection's share (a large
	// frame, or a small one whose bytes are not all read); these share
	// Options.StrangerReceiveBytes.
	classStranger
	// classShare: a frame whose payload the connection has already read
	// (a request sent in one write), within the connection's share
	// (connShare bytes held at once). It never waits: its bytes are in
	// the server's memory already, so peers that stall inside frames,
	// however many, cannot keep a well-behaved client's requests out.
	classShare
	numClasses
)

var classNames = [numClasses]string{"small", "large", "stranger", "share"}

// connShare is what each connection may hold in classShare frames: the
// size of its read buffer, so that a frame found whole in it always fits.
const connShare = readBufferSize

// readBufferSize is the size of a server connection's read buffer.
const readBufferSize = 16 << 10

// byteBudget caps the bytes a server holds in incoming frames, across all
// its connections: the payload buffers of frames being received and of
// requests whose handlers have not returned. A reader that needs more than
// is left waits, in arrival order within its class, until other frames
// release theirs, and gives up after a bounded wait (the connection is then
// closed). Without it, N peers that each announce a large frame and send
// half of it make the server hold N half-frames (64 × 7.5 MiB raised
// serve's RSS to 0.7 GiB).
//
// Large frames hold at most largeMax (max less the small frames' reserve)
// and those of strangers at most strangerMax, so that peers that announce
// large frames and stall can neither make small requests wait (20 such
// peers once stopped a producer's sends for 25 s) nor keep known clients'
// large frames out.
type byteBudget struct {
	max, largeMax, strangerMax int64
	largeFrame                 int // frames above this many bytes are large
	wait                       time.Duration
	clock                      clockwork.Clock // times the wait

	mu      sync.Mutex
	used    int64             // all classes
	held    [numClasses]int64 // by class
	waiters [numClasses][]*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n was granted
}

// charge is what one frame holds of the budget.
type charge struct {
	n     int64
	class frameClass
	// share is the connection's count of classShare bytes, which the
	// release lowers; nil for other classes.
	share *atomic.Int64
}

// newByteBudget returns the budget of a server with options o (defaults
// applied).
func newByteBudget(o Options) *byteBudget {
	large := o.MaxReceiveBytes - o.SmallFrameReserve
	return &byteBudget{max: o.MaxReceiveBytes, largeMax: large, strangerMax: min(o.StrangerReceiveBytes, large),
		largeFrame: o.LargeFrameSize, wait: o.ReceiveBudgetWait, clock: o.Clock}
}

// classOf returns the class of a frame of n payload bytes on a connection
// that has (known) or has not sent a valid request, and whose payload has
// (read) or has not all been read yet with room for it in the
// connection's share (see classShare).
func (b *byteBudget) classOf(n int, known, read bool) frameClass {
	switch {
	case b == nil:
		return classSmall
	case read:
		return classShare
	case !known:
		return classStranger
	case n <= b.largeFrame:
		return classSmall
	}
	return classLarge
}

// fitsLocked reports whether n more bytes of class k stay within the caps.
func (b *byteBudget) fitsLocked(k frameClass, n int64) bool {
	if k == classShare {
		return true // bounded by connShare a connection, not by max
	}
	if b.used+n > b.max {
		return false
	}
	large := b.held[classLarge] + b.held[classStranger]
	switch k {
	case classLarge:
		return large+n <= b.largeMax
	case classStranger:
		return large+n <= b.largeMax && b.held[classStranger]+n <= b.strangerMax
	}
	return true
}

func (b *byteBudget) takeLocked(k frameClass, n int64) {
	b.used += n
	b.held[k] += n
}

// acquire takes n bytes of class k, waiting at most b.wait (or until ctx
// is done). n must not exceed the class's cap.
func (b *byteBudget) acquire(ctx context.Context, k frameClass, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if len(b.waiters[k]) == 0 && b.fitsLocked(k, n) {
		b.takeLocked(k, n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters[k] = append(b.waiters[k], w)
	used, held := b.used, b.held[k]
	b.mu.Unlock()
	t := b.clock.NewTimer(b.wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.Chan():
		err = fmt.Errorf("%w: %d bytes wanted for a %s frame, %d of %d in use (%d by %s frames) for %v",
			ErrReceiveBudget, n, classNames[k], used, b.max, held, classNames[k], b.wait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while we gave up: hand it back
		b.releaseLocked(charge{n: n, class: k})
	default:
		q := b.waiters[k]
		for i, x := range q {
			if x == w {
				b.waiters[k] = append(q[:i], q[i+1:]...)
				break
			}
		}
		b.grantLocked() // the head may have changed
	}
	return err
}

// release returns a frame's charge and wakes the waiters that now fit.
func (b *byteBudget) release(c charge) {
	if b == nil || c.n <= 0 {
		return
	}
	b.mu.Lock()
	b.releaseLocked(c)
	b.mu.Unlock()
}

func (b *byteBudget) releaseLocked(c charge) {
	if c.share != nil {
		c.share.Add(-c.n)
	}
	b.used -= c.n
	b.held[c.class] -= c.n
	b.grantLocked()
}

// grantLocked wakes, class by class, the waiters at the head of each queue
// that now fit: small frames first.
func (b *byteBudget) grantLocked() {
	for k := range numClasses {
		for len(b.waiters[k]) > 0 && b.fitsLocked(k, b.waiters[k][0].n) {
			w := b.waiters[k][0]
			b.waiters[k] = b.waiters[k][1:]
			b.takeLocked(k, w.n)
			close(w.ready)
		}
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
// server's bytes for incoming frames (Options.MaxReceiveBytes, or the share
// of its frame class) stayed in use by other frames for
// Options.ReceiveBudgetWait.
var ErrReceiveBudget = errors.New("remoting: receive buffer budget exhausted")

// readPayloadBudget is readPayload charging every byte of the payload buffer
// to budget before it is allocated. Once the length is known, start is
// called with it and returns the frame's class. It returns the payload and
// the charge for it, which the caller releases once the frame is no longer
// used; on error nothing stays charged.
func readPayloadBudget(ctx context.Context, r io.Reader, maxFrameSize int, budget *byteBudget,
	start func(n int) frameClass) ([]byte, charge, error) {
	length, err := readLength(r)
	if err != nil {
		return nil, charge{}, err
	}
	n, err := checkLength(int32(length), maxFrameSize)
	if err != nil {
		return nil, charge{}, err
	}
	k := start(n)
	size := min(n, readChunk)
	if err := budget.acquire(ctx, k, int64(size)); err != nil {
		return nil, charge{}, err
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
			budget.release(charge{n: int64(len(buf)), class: k})
			return nil, charge{}, err
		}
		if got == n {
			return buf, charge{n: int64(len(buf)), class: k}, nil
		}
		// Both buffers are live during the copy: charge the new one
		// before allocating it, release the old one after.
		next := min(2*len(buf), n)
		if err := budget.acquire(ctx, k, int64(next)); err != nil {
			budget.release(charge{n: int64(len(buf)), class: k})
			return nil, charge{}, err
		}
		grown := make([]byte, next)
		copy(grown, buf[:got])
		budget.release(charge{n: int64(len(buf)), class: k})
		buf = grown
	}
}
