package transaction

import (
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/engine"
)

// TestCheckLoopRunsOnTheServiceClock: the background check-back pass
// ticks on Config.Clock: a half message older than transactionTimeOut is
// checked back by the first pass after the clock moved a CheckInterval
// (an hour), not before; on a wall-clock ticker no pass would run within
// the test.
func TestCheckLoopRunsOnTheServiceClock(t *testing.T) {
	e := newEnv(t)
	e.close()
	e.cfg.hooks.Manual = false
	e.cfg.CheckInterval = time.Hour
	e.open()
	checked := make(chan string, 8)
	e.svc.SetChecker(CheckerFunc(func(_ string, half *engine.MessageExt, _ []byte) error {
		checked <- half.Properties["key"]
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil { // the check ticker
		t.Fatal(err)
	}
	e.prepare("a")
	e.advance(time.Hour - time.Millisecond)
	select {
	case k := <-checked:
		t.Fatalf("%s checked back before a CheckInterval passed", k)
	default:
	}
	e.advance(time.Millisecond)
	select {
	case k := <-checked:
		if k != "a" {
			t.Fatalf("checked back %q, want a", k)
		}
	case <-ctx.Done():
		t.Fatal("no check-back after the clock moved a CheckInterval")
	}
}
