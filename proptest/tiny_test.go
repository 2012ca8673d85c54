package proptest

import (
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
