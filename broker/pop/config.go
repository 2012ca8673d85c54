package pop

import (
	"context"
	"log/slog"
	"time"

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
	// Now is the clock (time.Now); invisible times follow it.
	Now func() time.Time
	// Logger receives the service's logs (slog.Default()).
	Logger *slog.Logger
	// Put writes the revive-log records (nil: the store's Put). A
	// replicated broker group passes its Writer.
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
	// pop nor CommittedOffset has a position (nil: the queue's minimum
	// offset).
	FirstOffset func(group, topic string, queueID int32) int64
	// ReviveInterval is how often the background revive pass runs (1 s).
	ReviveInterval time.Duration
	// MaxHeld bounds the FIFO messages a queue holds back behind earlier
	// messages of their message groups (1024): a receive reads no further.
	MaxHeld int

	svc    hooks.Service // Manual: no background revive, the owner calls Revive
	broken hooks.Pop     // broken variants (tests only)
}

func init() { hooks.RegisterService(func(c *Config) *hooks.Service { return &c.svc }) }

func (c Config) withDefaults(s *engine.Store) Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Put == nil {
		c.Put = s.Put
	}
	if c.MaxDeliveryAttempts == nil {
		c.MaxDeliveryAttempts = func(string) int { return DefaultMaxDeliveryAttempts }
	}
	if c.ReviveInterval <= 0 {
		c.ReviveInterval = time.Second
	}
	if c.MaxHeld <= 0 {
		c.MaxHeld = 1024
	}
	if c.FirstOffset == nil {
		c.FirstOffset = func(_, topic string, qid int32) int64 { return s.MinOffsetInQueue(topic, qid) }
	}
	return c
}
