package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketstore/rocketstore/internal/defaults"
	"github.com/rocketstore/rocketstore/remoting"
)

// Config configures a Server. The zero value means RocketMQ's defaults.
type Config struct {
	// BrokerName is the broker's name in routes ("broker-a").
	BrokerName string
	// ClusterName is the broker's cluster ("DefaultCluster").
	ClusterName string
	// BrokerAddr is the "ip:port" that routes tell clients to connect
	// to. Empty means the address of the first listener; it must be an IP
	// literal (the Go client rejects host names).
	BrokerAddr string
	// ChannelExpiry expires a client that has sent no heartbeat for this
	// long (RocketMQ's channelExpiredTimeout, 120 s).
	ChannelExpiry time.Duration
	// LockExpiry is how long a queue lock lasts without renewal
	// (rocketmq.broker.rebalance.lockMaxLiveTime, 60 s).
	LockExpiry time.Duration
	// ScanInterval is how often expired clients are looked for (10 s, as
	// RocketMQ's ClientHousekeepingService).
	ScanInterval time.Duration
	// MaxHeldPullsPerConn bounds the pulls held at once for one
	// connection; further pulls that find nothing are answered at once
	// (PULL_NOT_FOUND) instead of held (1024).
	MaxHeldPullsPerConn int
	// MaxSuspend caps a pull's suspendTimeoutMillis (60 s; clients send
	// 15–20 s and time out at 30 s).
	MaxSuspend time.Duration
	// Remoting configures the transport (frame limit, idle timeout, ...).
	// Its OnClose is used by the server.
	Remoting remoting.Options
	// Logger receives the server's logs (slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, receives the server's counters.
	Metrics *Metrics
	// Now returns the current time (time.Now).
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultBrokerName          = "broker-a"
	DefaultClusterName         = "DefaultCluster"
	DefaultChannelExpiry       = 120 * time.Second
	DefaultLockExpiry          = 60 * time.Second
	DefaultScanInterval        = 10 * time.Second
	DefaultMaxHeldPullsPerConn = 1024
	DefaultMaxSuspend          = 60 * time.Second
)

func (c Config) withDefaults() Config {
	defaults.Set(&c.BrokerName, DefaultBrokerName)
	defaults.Set(&c.ClusterName, DefaultClusterName)
	defaults.Set(&c.ChannelExpiry, DefaultChannelExpiry)
	defaults.Set(&c.LockExpiry, DefaultLockExpiry)
	defaults.Set(&c.ScanInterval, DefaultScanInterval)
	defaults.Set(&c.MaxHeldPullsPerConn, DefaultMaxHeldPullsPerConn)
	defaults.Set(&c.MaxSuspend, DefaultMaxSuspend)
	defaults.Set(&c.Logger, slog.Default())
	defaults.Set(&c.Remoting.Logger, c.Logger)
	defaults.Set(&c.Now, time.Now)
	return c
}

// ErrConfig reports an unusable Config.
var ErrConfig = fmt.Errorf("server: bad config")

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.ChannelExpiry < 0 || c.LockExpiry < 0 || c.ScanInterval < 0 || c.MaxSuspend < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.MaxHeldPullsPerConn < 0:
		return fmt.Errorf("%w: MaxHeldPullsPerConn %d < 0", ErrConfig, c.MaxHeldPullsPerConn)
	}
	return c.Remoting.Validate()
}
