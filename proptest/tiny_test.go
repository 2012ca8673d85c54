package proptest

import (
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// tinyConfig is the manual-mode engine configuration of the hand-written
// crash cases: 4 KiB CommitLog files and 4 units a ConsumeQueue file, so
// that a few puts cross file boundaries. hook, when not nil, switches on
// a broken variant.
func tinyConfig(hook func(*hooks.Engine)) engine.Config {
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 4, Logger: quiet})
	if hook != nil {
		hook(hooks.EngineOf(&cfg))
	}
	return cfg
}

// syncAll dispatches everything put to s and syncs its CommitLog and
// ConsumeQueues, and so its checkpoint.
func syncAll(t *testing.T, s *engine.Store) {
	t.Helper()
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
}

// openTiny opens a tinyConfig store on a new crash-simulating file system
// with a clock that steps 10 ms at each read; the clock is returned so
// that a case can jump it, and cfg so that recoveries share it.
func openTiny(t *testing.T, opts crashsim.Options) (*crashsim.FS, *engine.Store, *clockstest.Stepping, engine.Config) {
	t.Helper()
	fs, err := crashsim.New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), 10*time.Millisecond)
	cfg := tinyConfig(nil)
	cfg.Clock = clock
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fs, s, clock, cfg
}
