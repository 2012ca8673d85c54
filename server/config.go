package server

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
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
	// Metrics, when set, receives the server's counters (metrics/prom
	// implements it with Prometheus).
	Metrics Metrics
	// Security configures ACL, TLS and client limits (none by default).
	Security Security
	// Clock is the server's one clock; nil means the wall clock (package
	// doc, "Time"). It is also Remoting's clock unless that is set.
	Clock clockwork.Clock

	// Role is what the server answers: the name server and the broker
	// (RoleBoth, the zero value), the broker only, or the name server
	// only (then New takes a nil broker).
	Role Role
	// NamesrvAddr lists the name servers ("host:port") the broker
	// registers with (RocketMQ's namesrvAddr; see ParseNamesrvAddr).
	// Empty, with RoleBoth, means the broker is its own name server's
	// only local broker and routes read its topic table directly, as a
	// single-node rocketstore always did.
	NamesrvAddr []string
	// BrokerID is the id the broker registers with: 0 is its group's
	// master, 1, 2, ... slaves (RocketMQ's brokerId). See SetBrokerID.
	BrokerID int64
	// HAServerAddr is the "host:port" registered as the broker's HA
	// address (RocketMQ's brokerIP2:haListenPort); name servers hand a
	// master's to its slaves.
	HAServerAddr string
	// RegisterInterval is how often the broker re-registers with its name
	// servers (RocketMQ's registerNameServerPeriod, 30 s).
	RegisterInterval time.Duration
	// RegisterTimeout bounds one registration (registerBrokerTimeoutMills,
	// 6 s).
	RegisterTimeout time.Duration
	// BrokerExpiry is how long a name server keeps a broker that stopped
	// registering (BROKER_CHANNEL_EXPIRED_TIME, 120 s); expired brokers
	// are looked for every ScanInterval.
	BrokerExpiry time.Duration
}

// Role selects the roles a Server plays.
type Role int

// Roles of a Server.
const (
	// RoleBoth is the name server and the broker in one process.
	RoleBoth Role = iota
	// RoleBroker is the broker only: it registers with NamesrvAddr.
	RoleBroker
	// RoleNameServer is the name server only: routes come from the
	// brokers that register with it.
	RoleNameServer
)

var roleNames = []string{"both", "broker", "namesrv"}

// String returns the role's name as ParseRole reads it.
func (r Role) String() string {
	if r >= 0 && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads "both", "broker" or "namesrv".
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if s == n {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("%w: role %q is not both, broker or namesrv", ErrConfig, s)
}

// hasBroker and hasNameServer report the roles r includes.
func (r Role) hasBroker() bool     { return r != RoleNameServer }
func (r Role) hasNameServer() bool { return r != RoleBroker }

// ParseNamesrvAddr splits RocketMQ's namesrvAddr, "host:port;host:port",
// into addresses; empty entries are skipped.
func ParseNamesrvAddr(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ";") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w: namesrvAddr entry %q is not host:port", ErrConfig, a)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("%w: namesrvAddr entry %q has no valid port", ErrConfig, a)
		}
		out = append(out, a)
	}
	return out, nil
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
	DefaultRegisterInterval    = 30 * time.Second
	DefaultRegisterTimeout     = 6 * time.Second
	DefaultBrokerExpiry        = 120 * time.Second
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
	defaults.Set(&c.Clock, clockwork.NewRealClock())
	defaults.Set(&c.Remoting.Clock, c.Clock)
	defaults.Set(&c.RegisterInterval, DefaultRegisterInterval)
	defaults.Set(&c.RegisterTimeout, DefaultRegisterTimeout)
	defaults.Set(&c.BrokerExpiry, DefaultBrokerExpiry)
	return c
}

// ErrConfig reports an unusable Config.
var ErrConfig = fmt.Errorf("server: bad config")

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.ChannelExpiry < 0 || c.LockExpiry < 0 || c.ScanInterval < 0 || c.MaxSuspend < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.RegisterInterval < 0 || c.RegisterTimeout < 0 || c.BrokerExpiry < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.Role < RoleBoth || c.Role > RoleNameServer:
		return fmt.Errorf("%w: unknown role %d", ErrConfig, int(c.Role))
	case c.Role == RoleNameServer && len(c.NamesrvAddr) > 0:
		return fmt.Errorf("%w: namesrvAddr is for a broker; the role is namesrv only", ErrConfig)
	case c.Role == RoleBroker && len(c.NamesrvAddr) == 0:
		return fmt.Errorf("%w: a broker-only server needs namesrvAddr to register with", ErrConfig)
	case c.BrokerID < 0:
		return fmt.Errorf("%w: brokerId %d < 0", ErrConfig, c.BrokerID)
	case c.MaxHeldPullsPerConn < 0:
		return fmt.Errorf("%w: MaxHeldPullsPerConn %d < 0", ErrConfig, c.MaxHeldPullsPerConn)
	}
	if err := c.Security.validate(); err != nil {
		return err
	}
	return c.Remoting.Validate()
}
