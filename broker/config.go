package broker

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/defaults"
)

// Config configures a Broker. The zero value of every field means RocketMQ
// 4.9.4's default (BrokerConfig / MessageStoreConfig), given in the
// field's comment; switches that default to on are named for turning them
// off.
type Config struct {
	// Store configures the engine. Its DelayLevels are also the delayed
	// delivery levels (RocketMQ's messageDelayLevel, 18 levels). Its
	// Clock (nil means the wall clock) is the broker's one clock: the
	// broker hands it to the index, the config tables, the offsets, the
	// long polls, the schedule, timer, transaction and pop services and
	// its own persist tickers, so that one clockwork.FakeClock drives the
	// whole broker in a test.
	Store engine.Config
	// BrokerPermission is the broker's perm (6: read + write).
	BrokerPermission int
	// BrokerName names the broker in OffsetMovedEvents (RocketMQ's
	// default: the host name, or DEFAULT_BROKER).
	BrokerName string
	// DisableAutoCreateTopic turns off autoCreateTopicEnable (true).
	DisableAutoCreateTopic bool
	// DisableAutoCreateSubscriptionGroup turns off
	// autoCreateSubscriptionGroup (true).
	DisableAutoCreateSubscriptionGroup bool
	// DefaultTopicQueueNums is the queue count of TBW102 (8).
	DefaultTopicQueueNums int
	// ShortPolling turns off longPollingEnable (true): a pull that finds
	// nothing is held ShortPollingTime and not woken by arrivals.
	ShortPolling bool
	// ShortPollingTime is shortPollingTimeMills (1 s).
	ShortPollingTime time.Duration
	// SlaveReadEnable lets suggestWhichBrokerId point at a slave (false).
	SlaveReadEnable bool
	// FlushConsumerOffsetInterval is how often consumer offsets are
	// persisted (5 s).
	FlushConsumerOffsetInterval time.Duration
	// FlushDelayOffsetInterval is how often delay offsets are persisted
	// (10 s).
	FlushDelayOffsetInterval time.Duration
	// DisableMessageIndex turns off messageIndexEnable (true).
	DisableMessageIndex bool
	// Index configures the index files (5,000,000 slots, 20,000,000
	// items per file).
	Index index.Config
	// Writer, when set, stores the messages the broker writes instead of
	// the store itself (see Writer; nil: the store).
	Writer Writer

	// BrokerClusterName names the cluster; the broker creates
	// {BrokerClusterName}_REPLY_TOPIC at start for request-reply
	// ("DefaultCluster").
	BrokerClusterName string
	// TraceOff turns off traceOn (true): send responses then carry
	// TRACE_ON=false, and the clients write no producer trace records.
	TraceOff bool
	// RegionID is regionId, the MSG_REGION of send responses
	// ("DefaultRegion").
	RegionID string
	// TraceTopicEnable is traceTopicEnable (false): create
	// MsgTraceTopicName (1 queue) at start.
	TraceTopicEnable bool
	// MsgTraceTopicName is msgTraceTopicName (RMQ_SYS_TRACE_TOPIC).
	MsgTraceTopicName string
	// EnablePropertyFilter is enablePropertyFilter (false): whether SQL92
	// subscriptions are evaluated. When off they are refused with
	// SYSTEM_ERROR, as RocketMQ does.
	EnablePropertyFilter bool
	// Transaction configures transactional messages (see
	// TransactionConfig).
	Transaction TransactionConfig
	// Timer configures RocketMQ 5.x timer messages (timerWheelEnable,
	// timerMaxDelaySec, timerPrecisionMs). Its Clock is set to the
	// store's.
	Timer timer.Config
}

// Default values of BrokerConfig.
const (
	DefaultBrokerPermission            = 6
	DefaultTopicQueueNums              = 8
	DefaultShortPollingTime            = time.Second
	DefaultFlushConsumerOffsetInterval = 5 * time.Second
	DefaultFlushDelayOffsetInterval    = 10 * time.Second
)

// defaultBrokerName is BrokerConfig's localHostName(), or DEFAULT_BROKER.
func defaultBrokerName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "DEFAULT_BROKER"
}

func (c Config) withDefaults() Config {
	defaults.Set(&c.BrokerPermission, DefaultBrokerPermission)
	defaults.Lazy(&c.BrokerName, defaultBrokerName)
	defaults.Set(&c.DefaultTopicQueueNums, DefaultTopicQueueNums)
	defaults.Set(&c.ShortPollingTime, DefaultShortPollingTime)
	defaults.Set(&c.FlushConsumerOffsetInterval, DefaultFlushConsumerOffsetInterval)
	defaults.Set(&c.FlushDelayOffsetInterval, DefaultFlushDelayOffsetInterval)
	c = c.withFeatureDefaults()
	defaults.Lazy(&c.Store.DelayLevels, engine.DefaultDelayLevels)
	defaults.Set(&c.Store.Logger, slog.Default())
	defaults.Set(&c.Store.Clock, clockwork.NewRealClock())
	defaults.Set(&c.Index.Clock, c.Store.Clock)
	defaults.Set(&c.Index.Logger, c.Store.Logger)
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if err := c.Store.Validate(); err != nil {
		return err
	}
	if err := c.Index.Validate(); err != nil {
		return err
	}
	if err := c.Timer.Validate(); err != nil {
		return err
	}
	c = c.withDefaults()
	switch {
	case c.BrokerPermission < 0 || c.BrokerPermission > 0xF:
		return fmt.Errorf("%w: BrokerPermission %d", ErrConfig, c.BrokerPermission)
	case c.DefaultTopicQueueNums < 0:
		return fmt.Errorf("%w: DefaultTopicQueueNums %d", ErrConfig, c.DefaultTopicQueueNums)
	case c.ShortPollingTime < 0 || c.FlushConsumerOffsetInterval < 0 || c.FlushDelayOffsetInterval < 0:
		return fmt.Errorf("%w: negative interval", ErrConfig)
	}
	return c.validateFeatures()
}
