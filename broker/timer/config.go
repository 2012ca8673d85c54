package timer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// RocketMQ 5.x's defaults (MessageStoreConfig).
const (
	// DefaultMaxDelay is timerMaxDelaySec: 3 days.
	DefaultMaxDelay = 259200 * time.Second
	// DefaultPrecisionMs is timerPrecisionMs.
	DefaultPrecisionMs = 1000
	// MinPrecisionMs is the finest precision accepted.
	MinPrecisionMs = 10
	// DefaultLogFileSize is the size of one TimerLog file: 2^17 units.
	DefaultLogFileSize = 52 << 17
	// DefaultCheckpointInterval is how often the timer state is saved.
	DefaultCheckpointInterval = time.Second
)

// ErrBadConfig reports an unusable Config.
var ErrBadConfig = errors.New("timer: bad config")

// Config configures timer messages. Its zero value is RocketMQ's
// defaults.
type Config struct {
	// Disabled is the negation of timerWheelEnable: timer messages are
	// refused.
	Disabled bool
	// MaxDelay is timerMaxDelaySec: a delivery time further from the
	// store time is refused.
	MaxDelay time.Duration
	// PrecisionMs is timerPrecisionMs: the length of a wheel slot.
	PrecisionMs int64
	// LogFileSize is the size of a TimerLog file, a multiple of 52.
	LogFileSize int64
	// CheckpointInterval is how often the state is saved (at least: a
	// checkpoint is also taken when many slots changed).
	CheckpointInterval time.Duration
	// Logger receives delivery problems.
	Logger *slog.Logger
	// Clock is the service's clock; nil means the wall clock. Delivery
	// times are compared with its time in milliseconds, so it must be the
	// store's clock (engine.Config.Clock; a broker hands it in), and it
	// times the waits for the next slot: tests hand in a
	// clockwork.FakeClock.
	Clock clockwork.Clock
	// Put, when set, stores the delivered messages instead of the
	// store's Put (a replicated group's log; see broker.Writer).
	Put func(ctx context.Context, m *engine.Message) (engine.PutResult, error)
	// PutsInFlight is how many delivery puts of one slot may be in
	// flight at once (0: 1, one after the other, in the order the
	// messages were stored). A replicated group's put waits for a Raft
	// round; puts in flight together share rounds.
	PutsInFlight int
	// Standby, when set and true, makes the service follow instead of
	// deliver (a replica that is not its group's leader): it enqueues the
	// replicated timer topic and moves its read time past each due slot
	// once the CommitLog shows the leader's deliveries of it, so that on
	// its election it starts where the former leader stopped. The owner
	// wakes the service when the replica stops leading (its first step
	// on standby must come before another leader's deliveries) and calls
	// Elected when it leads again.
	Standby func() bool

	// now reads Clock in milliseconds (set by withDefaults).
	now func() int64

	svc    hooks.Service
	broken hooks.Timer
}

func init() {
	hooks.RegisterService(func(c *Config) *hooks.Service { return &c.svc })
	hooks.RegisterTimer(func(c any) *hooks.Timer { return &c.(*Config).broken })
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.PrecisionMs == 0 {
		c.PrecisionMs = DefaultPrecisionMs
	}
	if c.LogFileSize == 0 {
		c.LogFileSize = DefaultLogFileSize
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	c.now = clocks.Millis(c.Clock)
	return c
}

// Validate reports a field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.PrecisionMs < MinPrecisionMs || c.PrecisionMs > 60_000:
		return fmt.Errorf("%w: timerPrecisionMs %d outside [%d, 60000]", ErrBadConfig, c.PrecisionMs, MinPrecisionMs)
	case c.MaxDelay < time.Duration(c.PrecisionMs)*time.Millisecond:
		return fmt.Errorf("%w: timerMaxDelaySec %v is shorter than timerPrecisionMs %d", ErrBadConfig, c.MaxDelay, c.PrecisionMs)
	case c.MaxDelay/time.Duration(c.PrecisionMs)/time.Millisecond > 1<<26:
		return fmt.Errorf("%w: timerMaxDelaySec %v / timerPrecisionMs %d: more than 2^26 wheel slots", ErrBadConfig, c.MaxDelay, c.PrecisionMs)
	case c.LogFileSize <= 0 || c.LogFileSize%52 != 0:
		return fmt.Errorf("%w: TimerLog file size %d is not a positive multiple of 52", ErrBadConfig, c.LogFileSize)
	case c.CheckpointInterval < 0:
		return fmt.Errorf("%w: negative checkpoint interval %v", ErrBadConfig, c.CheckpointInterval)
	}
	return nil
}

// wheelSlots is the wheel's length: the maximum delay plus a margin of
// 10 % and a minute, so that a message accepted at the maximum delay
// fits even when delivery lags behind.
func (c Config) wheelSlots() int64 {
	window := c.MaxDelay.Milliseconds() + c.MaxDelay.Milliseconds()/10 + 60_000
	return window/c.PrecisionMs + 1
}
