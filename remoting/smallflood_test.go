package remoting

import (
	"testing"
	"time"
)

// Many peers that each announce a frame just under LargeFrameSize (a small
// frame, which may use the whole budget), send half and stall can hold the
// entire receive budget, reserve included: 400 such strangers stopped a
// producer's sends on serve (0 msgs/s for the attack's length). A frame
// that has arrived whole with the bytes the connection already read (a
// well-behaved client's request, sent in one write) never waits for
// budget: its bytes are in the server's memory already. And strangers'
// frames that are still arriving draw on the strangers' share, whatever
// their size, so that they cannot take what known clients' frames need.
func TestSmallHalfFrameFloodSmallRequestsGetThrough(t *testing.T) {
	const (
		frameMax  = 1 << 20
		small     = 256 << 10 // LargeFrameSize
		attackers = 100       // 100 × 128 KiB held: more than the budget
		requests  = 100
	)
	started := make(chan struct{}, 1024)
	srv, addr, _ := testServer(t, nil, Options{
		MaxFrameSize: frameMax, MaxReceiveBytes: 8 * frameMax, LargeFrameSize: small,
		ReceiveBudgetWait: time.Hour, IdleTimeout: time.Hour, FrameTimeout: time.Hour,
		onFrameStart: func() { started <- struct{}{} },
	})
	// Half of them known, half strangers; every one holds what it can.
	conns := halfFrameAttack(t, addr, attackers, attackers/2, small-8, started)
	defer func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	s := srv.Stats()
	if s.ReceiveBytesInUse == 0 {
		t.Fatal("the attackers hold no receive budget: the attack did not happen")
	}
	t.Logf("the attackers hold %d of %d bytes", s.ReceiveBytesInUse, 8*frameMax)

	good := dial(t, addr, nil)
	ctx := testCtx(t)
	for i := range requests {
		if err := echo(ctx, good, i); err != nil {
			t.Fatalf("request %d of the well-behaved client under attack: %v (stats %+v)", i, err, srv.Stats())
		}
	}
	if s := srv.Stats(); s.ConnsOpen != attackers+1 {
		t.Fatalf("the attackers must still hold their frames while the client is served: %+v", s)
	}
}
