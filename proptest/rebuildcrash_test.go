package proptest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// TestRebuildInterruptedByPowerCut: recovery rebuilds the ConsumeQueues
// (here because a unit write of its scan fails), and the power goes while
// the rebuild replays the CommitLog: the old queues' removal reached the
// disk, the new queues did not. The checkpoint still vouches for the old
// units, so the next recovery scans only from the second CommitLog file,
// and without the rebuild marker queue C's units for the first file would
// be gone: its first messages hidden (the deferred directory syncs widen
// the window). With the marker the next recovery redoes the rebuild, and C is whole.
func TestRebuildInterruptedByPowerCut(t *testing.T) {
	if errs := interruptedRebuild(t, nil); len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	t.Run("broken variant", func(t *testing.T) {
		errs := interruptedRebuild(t, func(h *hooks.Engine) { h.NoRebuildMarker = true })
		if len(errs) == 0 {
			t.Fatal("queue C was whole without the rebuild marker: the test shows nothing")
		}
		t.Logf("caught: %s", errs[0])
	})
}

// interruptedRebuild runs the case and returns what was wrong after the
// second recovery.
func interruptedRebuild(t *testing.T, hook func(*hooks.Engine)) []string {
	t.Helper()
	fs, s, clock, cfg := openTiny(t, crashsim.Options{})
	ctx := context.Background()
	var n int64
	for ; s.CommitLog().MaxOffset() < 2*4096+300; n++ {
		if n > 0 && s.CommitLog().MaxOffset() >= 2*4096 && clock.FakeClock.Now().UnixMilli() < 1_700_000_100_000 {
			// Ten seconds later, so that the checkpoint's scan start
			// (3 s before its oldest timestamp) is past file 0.
			clock.Advance(100 * time.Second)
		}
		if _, err := s.Put(ctx, &engine.Message{Topic: "C", Body: []byte(fmt.Sprintf("c%03d-%s", n, strings.Repeat("x", 100)))}); err != nil {
			t.Fatal(err)
		}
	}
	syncAll(t, s)
	engineops.Of(s).Abandon()

	// First recovery: a unit write of the scan fails, so recovery
	// rebuilds; the power goes at the rebuild's first new queue file.
	rfs, err := crashsim.New(fs.Crash(crashsim.Oldest), crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Phases: -1 until the scan creates a queue file (after cutting the
	// queues at its start), 0 until that file's first unit write (failed),
	// 1 until the rebuild removes the queues, 2 until its first new file.
	phase := -1
	rfs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		switch {
		case phase == -1 && op.Kind == crashsim.OpCreate && strings.HasPrefix(op.Path, "consumequeue/"):
			phase = 0
		case phase == 0 && op.Kind == crashsim.OpWrite && strings.HasPrefix(op.Path, "consumequeue/"):
			phase = 1
			return crashsim.ErrIO
		case phase == 1 && op.Kind == crashsim.OpRemoveAll && op.Path == "consumequeue":
			phase = 2
		case phase == 2 && op.Kind == crashsim.OpCreate && strings.HasPrefix(op.Path, "consumequeue/"):
			return crashsim.ErrCrash
		}
		return nil
	}))
	rcfg := tinyConfig(hook)
	rcfg.Clock = cfg.Clock
	r, err := engine.Open(rfs, rcfg)
	if err == nil {
		r.Close()
		t.Fatalf("the first recovery finished (phase %d): the power cut did not happen", phase)
	}
	if !rfs.Frozen() {
		t.Fatalf("the first recovery failed without the power cut (phase %d): %v", phase, err)
	}
	// The queues' removal is durable, nothing else that was pending.
	img := rfs.Crash(chooserFunc(func(n int, what string) int {
		if strings.HasPrefix(what, "keep removeall ") || strings.HasPrefix(what, "keep remove ") {
			return crashsim.Persisted
		}
		return 0
	}))
	ffs, err := crashsim.New(img, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fcfg := tinyConfig(nil)
	fcfg.Clock = cfg.Clock
	r, err = engine.Open(ffs, fcfg)
	if err != nil {
		t.Fatalf("second recovery: %v", err)
	}
	var errs []string
	if lo, hi := r.MinOffsetInQueue("C", 0), r.MaxOffsetInQueue("C", 0); lo != 0 || hi != n {
		errs = append(errs, fmt.Sprintf("C/0 holds [%d, %d) after the second recovery, want [0, %d)", lo, hi, n))
	}
	for i := int64(0); i < n && len(errs) == 0; i++ {
		got, err := r.GetMessage("C", 0, i, 1, nil)
		if err != nil || len(got.Messages) != 1 {
			errs = append(errs, fmt.Sprintf("C/0 offset %d unreadable: %v", i, err))
			continue
		}
		if want := fmt.Sprintf("c%03d-", i); !strings.Contains(string(got.Messages[0].Record), want) {
			errs = append(errs, fmt.Sprintf("C/0 offset %d is not %s…", i, want))
		}
		got.Release()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := verify.Run(ffs, verify.Options{}); err != nil || !rep.OK() {
		errs = append(errs, fmt.Sprintf("verify: %v %s", err, rep.Summary()))
	}
	return errs
}
