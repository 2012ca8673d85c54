package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/crashsim"
)

// TestPersistLoopRunsOnTheStoreClock: the broker persists consumer
// offsets on a ticker of its store's clock: with an hour's
// FlushConsumerOffsetInterval on a fake clock, a committed offset is saved
// once that clock moved the interval. The clock moves a minute at a time
// (the loop's ticker starts with the broker, at a moment the test does
// not see) for at most a few seconds of wall time: on a wall-clock ticker
// of an hour nothing would be saved.
func TestPersistLoopRunsOnTheStoreClock(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	saved := make(chan struct{}, 1)
	fs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		if op.Kind == crashsim.OpRename && strings.HasPrefix(op.To, offset.File) {
			select {
			case saved <- struct{}{}:
			default:
			}
		}
		return nil
	}))
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := testConfig()
	cfg.Store.Clock = clock
	cfg.FlushConsumerOffsetInterval = time.Hour
	b, err := broker.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	createTopic(t, b, "T", 1)
	select { // a save at Open is not the loop's
	case <-saved:
	default:
	}
	b.Offsets().Commit("pull", "g", "T", 0, 1)
	for i := 0; ; i++ {
		clock.Advance(time.Minute)
		select {
		case <-saved:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 300 {
			t.Fatal("consumer offsets not saved after 5 hours of the store's clock")
		}
	}
}
