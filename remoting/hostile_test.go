package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// halfFrameAttack opens n connections that each announce a frame of
// frameMax bytes, send half of it and stall; the first known of them send
// a valid request first, so that their large frames count as a known
// client's. It returns once the server waits for the rest of every frame.
func halfFrameAttack(t testing.TB, addr string, n, known, frameMax int, started <-chan struct{}) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		if i < known {
			f, err := NewRequest(testCodeEcho, []byte("hello")).MarshalFrame()
			if err != nil {
				t.Fatal(err)
			}
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Write(f); err != nil {
				t.Fatal(err)
			}
			if _, err := readPayload(nc, frameMax); err != nil {
				t.Fatalf("attacker %d: no answer to its valid request: %v", i, err)
			}
			_ = nc.SetDeadline(time.Time{})
		}
	}
	hdr := binary.BigEndian.AppendUint32(nil, uint32(frameMax-frameLenSize))
	hdr = binary.BigEndian.AppendUint32(hdr, 0)
	half := append(hdr, make([]byte, frameMax/2)...)
	for _, nc := range conns {
		go func() {
			// The server may stop reading (budget) or hang up: both end the write.
			_, _ = nc.Write(half)
		}()
	}
	for i := range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d attackers' frames started", i, n)
		}
	}
	return conns
}

// Connections that announce large frames, send half and stall hold receive
// budget, but a well-behaved client's small requests all complete meanwhile
// (small frames have a reserve large frames cannot take, and strangers'
// large frames a share of their own); once FrameTimeout passes on the
// server's clock, the reaper closes every attacker and the budget is free.
// Rates are for BenchmarkHalfFrameAttack; this checks the counts.
func TestHalfFrameAttackSmallFramesGetThrough(t *testing.T) {
	const (
		frameMax  = 1 << 20
		attackers = 20
		requests  = 200
	)
	clock := clockwork.NewFakeClock()
	started := make(chan struct{}, 1024)
	srv, addr, closed := testServer(t, nil, Options{
		MaxFrameSize: frameMax, MaxReceiveBytes: 8 * frameMax, LargeFrameSize: 64 << 10,
		ReceiveBudgetWait: time.Hour, IdleTimeout: time.Hour, FrameTimeout: 10 * time.Second, Clock: clock,
		onFrameStart: func() { started <- struct{}{} },
	})
	conns := halfFrameAttack(t, addr, attackers, attackers/2, frameMax, started)
	defer func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	held := srv.Stats().ReceiveBytesInUse
	if held == 0 {
		t.Fatal("the attackers hold no receive budget: the attack did not happen")
	}

	good := dial(t, addr, nil)
	ctx := testCtx(t)
	for i := range requests {
		if err := echo(ctx, good, i); err != nil {
			t.Fatalf("request %d of the well-behaved client under attack: %v (stats %+v)", i, err, srv.Stats())
		}
	}
	if s := srv.Stats(); s.ConnsOpen != attackers+1 || s.FrameTimeouts != 0 || s.ReceiveBudgetCloses != 0 {
		t.Fatalf("the attackers must still hold their frames while the client is served: %+v", s)
	}

	// The reaper runs on the fake clock's ticker: past FrameTimeout it
	// closes every attacker, whether it holds budget or waits for some.
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10*time.Second + 2*reapPeriod(10*time.Second))
	for i := range attackers {
		select {
		case r := <-closed:
			if !errors.Is(r, ErrFrameTimeout) {
				t.Fatalf("attacker closed with %v, want ErrFrameTimeout", r)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d attackers closed after FrameTimeout", i, attackers)
		}
	}
	if s := srv.Stats(); s.FrameTimeouts != attackers || s.ReceiveBytesInUse != 0 || s.ConnsOpen != 1 {
		t.Fatalf("after the reaper: %+v", s)
	}
	if err := echo(ctx, good, -1); err != nil {
		t.Fatal(err)
	}
}

// The budget's classes: small frames fit in the reserve when large frames
// hold all they may; strangers' large frames stop at their own cap while a
// known client's large frame still fits.
func TestByteBudgetClasses(t *testing.T) {
	o := Options{MaxFrameSize: 100, MaxReceiveBytes: 1000, SmallFrameReserve: 200, StrangerReceiveBytes: 300,
		LargeFrameSize: 10, ReceiveBudgetWait: time.Millisecond}.withDefaults()
	b := newByteBudget(o)
	ctx := context.Background()
	for _, c := range []struct {
		n           int
		known, read bool
		want        frameClass
	}{
		{10, true, false, classSmall},
		{11, true, false, classLarge},
		{10, false, false, classStranger}, // a stranger's frame still arriving
		{11, false, false, classStranger},
		{10, false, true, classShare}, // read whole: in memory already
		{10, true, true, classShare},
	} {
		if got := b.classOf(c.n, c.known, c.read); got != c.want {
			t.Fatalf("class of a %d-byte frame (known %v, read %v): %s, want %s", c.n, c.known, c.read, classNames[got], classNames[c.want])
		}
	}
	// A frame read whole never waits, even with the budget all in use.
	full := charge{n: 1000, class: classSmall}
	if err := b.acquire(ctx, full.class, full.n); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, classShare, 10); err != nil {
		t.Fatalf("a frame read whole waited for budget: %v", err)
	}
	b.release(charge{n: 10, class: classShare})
	b.release(full)
	for range 3 {
		if err := b.acquire(ctx, classStranger, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.acquire(ctx, classStranger, 1); !errors.Is(err, ErrReceiveBudget) {
		t.Fatalf("stranger beyond its cap: %v, want ErrReceiveBudget", err)
	}
	for range 5 {
		if err := b.acquire(ctx, classLarge, 100); err != nil {
			t.Fatalf("known large frame with strangers at their cap: %v", err)
		}
	}
	if err := b.acquire(ctx, classLarge, 1); !errors.Is(err, ErrReceiveBudget) {
		t.Fatalf("large frames beyond MaxReceiveBytes less the reserve: %v, want ErrReceiveBudget", err)
	}
	for range 20 {
		if err := b.acquire(ctx, classSmall, 10); err != nil {
			t.Fatalf("small frame with large frames at their cap: %v", err)
		}
	}
	if err := b.acquire(ctx, classSmall, 1); !errors.Is(err, ErrReceiveBudget) {
		t.Fatalf("beyond MaxReceiveBytes: %v", err)
	}
	b.release(charge{n: 100, class: classStranger})
	if err := b.acquire(ctx, classLarge, 100); err != nil {
		t.Fatalf("a known large frame after a stranger's released: %v", err)
	}
	if b.inUse() != 1000 || b.held[classStranger] != 200 || b.held[classLarge] != 600 {
		t.Fatalf("in use %d (%v), want 1000", b.inUse(), b.held)
	}
}
