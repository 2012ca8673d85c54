package pop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestReviveRunsOnTheServiceClock: the background revive pass ticks on
// Config.Clock. A message past its last attempt's invisible time is dead-
// lettered by the first pass after the clock moved a ReviveInterval (an
// hour), not before; on a wall-clock ticker no pass would run within the
// test.
func TestReviveRunsOnTheServiceClock(t *testing.T) {
	e := newEnv(t, hooks.Pop{})
	e.init(hooks.Pop{}, 1)
	e.cfg.svc.Manual = false
	e.cfg.ReviveInterval = time.Hour
	puts := make(chan struct{}, 64)
	e.cutAfterPut = func() error {
		select {
		case puts <- struct{}{}:
		default:
		}
		return nil
	}
	e.close()
	e.open()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil { // the revive ticker
		t.Fatal(err)
	}
	e.send(0, "a", "")
	if ms := e.receive(0, 1, time.Second, false); len(ms) != 1 || ms[0].Attempt != 1 {
		t.Fatalf("received %+v", ms)
	}
	e.advance(time.Second) // the invisible time is over; no pass yet
	if got := e.dlqKeys(); len(got) != 0 {
		t.Fatalf("dead-lettered %v before a revive pass", got)
	}
	for len(puts) > 0 {
		<-puts
	}
	e.advance(time.Hour - time.Second)
	deadline := time.After(time.Minute)
	for {
		select {
		case <-puts:
		case <-deadline:
			t.Fatal("no revive pass after the clock moved a ReviveInterval")
		}
		if got := e.dlqKeys(); slices.Equal(got, []string{"a"}) {
			return
		}
	}
}
