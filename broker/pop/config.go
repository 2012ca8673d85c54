package pop

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// DefaultMaxDeliveryAttempts is a group's retryMaxTimes default (16) + 1.
const DefaultMaxDeliveryAttempts = 17

// Config configures a Service. Zero values mean the defaults named.
type Config struct {
	// BrokerName goes into receipt handles.
	BrokerName string
	// ReviveTopic holds the service's records
	// (record.ReviveTopic(clusterName); required).
	ReviveTopic string
	// Clock is the service's clock; nil means the wall clock. Invisible
	// times follow it, and it runs the revive ticker and the long-polling
	// receives' timers; a broker hands in its store's clock.
	Clock clockwork.Clock
	// Logger receives the service's logs (slog.Default()).
	Logger *slog.Logger
	// Put writes the revive-log records (nil: the store's PutUnhurried:
	// the records are read through their queue only by Open and Reload,
	// which wait for their dispatch). A replicated broker group passes
	// its Writer. It must not keep the
	// message's Body once it returns: pop reuses the buffer.
	Put func(ctx context.Context, m *record.Message) (engine.PutResult, error)
	// MaxDeliveryAttempts returns a group's maxDeliveryAttempts, its
	// retryMaxTimes + 1 (nil: DefaultMaxDeliveryAttempts).
	MaxDeliveryAttempts func(group string) int
	// DeadLetter stores a message that reached its group's
	// maxDeliveryAttempts in the group's DLQ; it must be durable when it
	// returns nil (nil: Put to %DLQ%group queue 0).
	DeadLetter func(ctx context.Context, group string, m *record.MessageExt) error
	// CommittedOffset returns a group's consumer offset of a queue
	// (offset.Manager.Query; -1: none). Pop starts at the furthest of its
	// own position and this one (nil: pop's own position only).
	CommittedOffset func(group, topic string, queueID int32) int64
	// CommitOffset records pop's position as the group's consumer offset
	// once the checkpoint that advanced it is written (nil: not recorded).
	CommitOffset func(group, topic string, queueID int32, offset int64)
	// FirstOffset is where a group's pop of a queue starts when neither
	// pop nor CommittedOffset has a position (nil: RocketMQ 5.x's
	// ConsumeInitMode.MAX, which its proxy asks for, with
	// initPopOffsetByCheckMsgInMem: offset 0 while the queue still holds
	// its first message, else its last message).
	FirstOffset func(group, topic string, queueID int32) int64
	// ReviveInterval is how often the background revive pass runs (1 s).
	ReviveInterval time.Duration
	// QueueIDs returns the queues a receive of all queues reads (nil:
	// the store's queues of the topic).
	QueueIDs func(topic string) []int32
	// FS holds ReplayFromFile, where Open starts replaying (nil: no
	// snapshots; Open replays the whole revive topic).
	FS backend.FS
	// CompactEvery is how many records the revive pass lets the log
	// grow by before it writes a snapshot (Compact; 100,000).
	CompactEvery int
	// Arrivals wakes long-polling receives (nil: ReceiveRequest.PollTime
	// is ignored and receives return at once); the store must dispatch
	// to it.
	Arrivals *Arrivals
	// MaxHeld bounds the FIFO messages a queue holds back behind earlier
	// messages of their message groups (1024): a receive reads no further.
	MaxHeld int

	svc    hooks.Service // Manual: no background revive, the owner calls Revive
	broken hooks.Pop     // broken variants (tests only)
	// timer starts the timers of long-polling receives (clockTimer of
	// Clock); tests inject timers that report each start.
	timer func(d time.Duration) (c <-chan time.Time, stop func() bool)
}

// clockTimer returns a timer starter of clock: a timer as a channel and
// its Stop.
func clockTimer(clock clockwork.Clock) func(d time.Duration) (<-chan time.Time, func() bool) {
	return func(d time.Duration) (<-chan time.Time, func() bool) {
		t := clock.NewTimer(d)
		return t.Chan(), t.Stop
	}
}

func init() { hooks.RegisterService(func(c *Config) *hooks.Service { return &c.svc }) }

func (c Config) withDefaults(s *engine.Store) Config {
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.timer == nil {
		c.timer = clockTimer(c.Clock)
	}
	if c.Put == nil {
		c.Put = s.PutUnhurried
	}
	if c.MaxDeliveryAttempts == nil {
		c.MaxDeliveryAttempts = func(string) int { return DefaultMaxDeliveryAttempts }
	}
	if c.ReviveInterval <= 0 {
		c.ReviveInterval = time.Second
	}
	if c.QueueIDs == nil {
		c.QueueIDs = func(topic string) []int32 {
			qids := slices.Clone(s.Topics()[topic])
			slices.Sort(qids)
			return qids
		}
	}
	if c.CompactEvery <= 0 {
		c.CompactEvery = 100_000
	}
	if c.MaxHeld <= 0 {
		c.MaxHeld = 1024
	}
	if c.FirstOffset == nil {
		c.FirstOffset = func(_, topic string, qid int32) int64 { return firstOffset(s, topic, qid) }
	}
	return c
}

// firstOffset is PopMessageProcessor.getInitOffset for ConsumeInitMode.MAX
// with initPopOffsetByCheckMsgInMem (its default): a queue that still
// starts at 0 is popped from 0 (RocketMQ checks that the message is in
// memory; this store maps its CommitLog, so the check is that the queue
// still holds it), otherwise from its last message.
func firstOffset(s *engine.Store, topic string, qid int32) int64 {
	if s.MinOffsetInQueue(topic, qid) <= 0 {
		return 0
	}
	return max(0, s.MaxOffsetInQueue(topic, qid)-1)
}
