package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rocketstore/rocketstore/broker/schedule"
	"github.com/rocketstore/rocketstore/engine"
)

// FileConfig is the YAML configuration file of `rocketstore serve`. Keys
// are RocketMQ's broker.conf names; only the settings rocketstore
// supports are accepted, and an unknown key is an error. Absent keys keep
// RocketMQ's defaults. Durations in RocketMQ's *Interval/*Mills/*Timeout
// settings are milliseconds, as in broker.conf.
//
//	brokerName: broker-a
//	brokerClusterName: DefaultCluster
//	brokerIP1: 127.0.0.1        # address advertised in routes
//	listenPort: 10911           # a separate broker port (default: the name-server address)
//	storePathRootDir: ./rocketstore-data
//	flushDiskType: ASYNC_FLUSH  # or SYNC_FLUSH
//	mapedFileSizeCommitLog: 1073741824
//	maxMessageSize: 4194304
//	maxTransferCountOnMessageInMemory: 32     # a pull's result from memory: at most 32 messages
//	maxTransferBytesOnMessageInMemory: 262144 # and 256 KiB (from disk: ...InDisk, 8 and 64 KiB)
//	messageDelayLevel: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
//	autoCreateTopicEnable: true
//	aclEnable: true             # RocketMQ plain ACL; rules in aclFile
//	aclFile: /etc/rocketstore/plain_acl.yml   # default DIR/config/plain_acl.yml
//	tlsServerMode: permissive   # disabled (default) | permissive | enforcing
//	tlsServerCertPath: /etc/rocketstore/server.pem
//	tlsServerKeyPath: /etc/rocketstore/server.key
//	autoCreateTopicMaxPerClient: 100
//	autoCreateTopicMaxTotal: 10000
//	autoCreateTopicMaxQueueNums: 8
//	connRequestRateLimit: 20000 # requests/s per connection
//	connRequestBurst: 40000
//	maxInFlightRequests: 4096
//	serverMaxConnections: 10000        # refuse connections beyond (serve's default: below the open-file limit)
//	serverMaxReceiveBytes: 134217728   # bytes of incoming frames held at once (default 128 MiB)
//	namesrvAddr: 127.0.0.1:9876;127.0.0.1:9877  # register with these name servers
//	brokerId: 0                 # 0 master, 1, 2, ... slaves
//	brokerIP2: 127.0.0.1        # HA address host (default brokerIP1)
//	haListenPort: 10912         # HA address port, registered as haServerAddr
type FileConfig struct {
	NamesrvAddr                 *string `yaml:"namesrvAddr"`
	BrokerID                    *int64  `yaml:"brokerId"`
	BrokerIP2                   *string `yaml:"brokerIP2"`
	HAListenPort                *int    `yaml:"haListenPort"`
	BrokerName                  *string `yaml:"brokerName"`
	BrokerClusterName           *string `yaml:"brokerClusterName"`
	BrokerIP1                   *string `yaml:"brokerIP1"`
	ListenPort                  *int    `yaml:"listenPort"`
	NamesrvListen               *string `yaml:"namesrvListen"`
	StorePathRootDir            *string `yaml:"storePathRootDir"`
	FlushDiskType               *string `yaml:"flushDiskType"`
	MapedFileSizeCommitLog      *int64  `yaml:"mapedFileSizeCommitLog"`
	MappedFileSizeCommitLog     *int64  `yaml:"mappedFileSizeCommitLog"`
	MapedFileSizeConsumeQueue   *int64  `yaml:"mapedFileSizeConsumeQueue"`
	MappedFileSizeConsumeQueue  *int64  `yaml:"mappedFileSizeConsumeQueue"`
	MaxMessageSize              *int    `yaml:"maxMessageSize"`
	MessageDelayLevel           *string `yaml:"messageDelayLevel"`
	AutoCreateTopicEnable       *bool   `yaml:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup *bool   `yaml:"autoCreateSubscriptionGroup"`
	DefaultTopicQueueNums       *int    `yaml:"defaultTopicQueueNums"`
	BrokerPermission            *int    `yaml:"brokerPermission"`
	LongPollingEnable           *bool   `yaml:"longPollingEnable"`
	ShortPollingTimeMills       *int64  `yaml:"shortPollingTimeMills"`
	MessageIndexEnable          *bool   `yaml:"messageIndexEnable"`
	// MaxHashSlotNum and MaxIndexNum are an index file's geometry
	// (RocketMQ's names; 5,000,000 and 20,000,000: 420 MB a file).
	MaxHashSlotNum *int `yaml:"maxHashSlotNum"`
	MaxIndexNum    *int `yaml:"maxIndexNum"`
	// The transfer limits of one pull's result (RocketMQ's names and
	// defaults: 262144 / 32 from memory, 65536 / 8 from disk).
	MaxTransferBytesOnMessageInMemory *int `yaml:"maxTransferBytesOnMessageInMemory"`
	MaxTransferCountOnMessageInMemory *int `yaml:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInDisk   *int `yaml:"maxTransferBytesOnMessageInDisk"`
	MaxTransferCountOnMessageInDisk   *int `yaml:"maxTransferCountOnMessageInDisk"`
	// RecoverUndecidableDamage is rocketstore's own: what recovery does
	// with a damaged CommitLog record that intact records follow when it
	// cannot prove the damage older than the crash: refuse (default),
	// truncate (RocketMQ's behaviour) or skip.
	RecoverUndecidableDamage  *string `yaml:"recoverUndecidableDamage"`
	SyncFlushTimeout          *int64  `yaml:"syncFlushTimeout"`
	FlushIntervalCommitLog    *int64  `yaml:"flushIntervalCommitLog"`
	FlushCommitLogLeastPages  *int    `yaml:"flushCommitLogLeastPages"`
	FlushIntervalConsumeQueue *int64  `yaml:"flushIntervalConsumeQueue"`
	// FlushConsumeQueueThoroughInterval is how often every ConsumeQueue
	// is flushed whole and the checkpoint written (60000 ms).
	FlushConsumeQueueThoroughInterval *int64 `yaml:"flushConsumeQueueThoroughInterval"`
	FlushConsumerOffsetInterval       *int64 `yaml:"flushConsumerOffsetInterval"`
	FlushDelayOffsetInterval          *int64 `yaml:"flushDelayOffsetInterval"`
	ServerSocketMaxFrameSize          *int   `yaml:"serverSocketMaxFrameSize"`
	ServerChannelMaxIdleSeconds       *int   `yaml:"serverChannelMaxIdleTimeSeconds"`
	FeatureKeys                       `yaml:",inline"`
	TimerKeys                         `yaml:",inline"`
	// Not RocketMQ keys: limits against hostile or runaway clients.
	ServerMaxConnections  *int   `yaml:"serverMaxConnections"`
	ServerMaxReceiveBytes *int64 `yaml:"serverMaxReceiveBytes"`
	ConnectionKeys        `yaml:",inline"`

	// Security (see Security and docs/security.md).
	AclEnable                   *bool    `yaml:"aclEnable"`
	AclFile                     *string  `yaml:"aclFile"`
	TLSServerMode               *string  `yaml:"tlsServerMode"`
	TLSServerCertPath           *string  `yaml:"tlsServerCertPath"`
	TLSServerKeyPath            *string  `yaml:"tlsServerKeyPath"`
	AutoCreateTopicMaxPerClient *int     `yaml:"autoCreateTopicMaxPerClient"`
	AutoCreateTopicMaxTotal     *int     `yaml:"autoCreateTopicMaxTotal"`
	AutoCreateTopicMaxQueueNums *int     `yaml:"autoCreateTopicMaxQueueNums"`
	ConnRequestRateLimit        *float64 `yaml:"connRequestRateLimit"`
	ConnRequestBurst            *int     `yaml:"connRequestBurst"`
	MaxInFlightRequests         *int     `yaml:"maxInFlightRequests"`

	// GrpcServerPort is rmq-proxy.json's port of the 5.x gRPC endpoint;
	// the command reads it (serve --grpc-listen); Apply does not.
	GrpcServerPort *int `yaml:"grpcServerPort"`
}

// ParseFileConfig strictly decodes YAML configuration.
func ParseFileConfig(data []byte) (*FileConfig, error) {
	var fc FileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &fc, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// Apply sets the configured values in nc. Listen and Dir are set only
// when the file names them (flags given on the command line win; the
// caller applies them afterwards).
func (fc *FileConfig) Apply(nc *NodeConfig) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&nc.Server.BrokerName, fc.BrokerName)
	set(&nc.Server.ClusterName, fc.BrokerClusterName)
	set(&nc.Dir, fc.StorePathRootDir)
	set(&nc.Listen, fc.NamesrvListen)
	if fc.BrokerIP1 != nil {
		// Checked before any use: a host name would otherwise be
		// resolved, or fail later with a less clear message.
		if _, err := netip.ParseAddr(*fc.BrokerIP1); err != nil {
			return fmt.Errorf("%w: brokerIP1 %q must be an IP literal (such as 192.0.2.10), not a host name", ErrConfig, *fc.BrokerIP1)
		}
	}
	if err := fc.applyCluster(nc); err != nil {
		return err
	}
	if fc.ListenPort != nil {
		host := "127.0.0.1"
		if fc.BrokerIP1 != nil {
			host = *fc.BrokerIP1
		}
		nc.BrokerListen = net.JoinHostPort(host, strconv.Itoa(*fc.ListenPort))
	}
	if fc.BrokerIP1 != nil && fc.ListenPort != nil {
		nc.Server.BrokerAddr = nc.BrokerListen
	}
	sc := &nc.Broker.Store
	if fc.RecoverUndecidableDamage != nil {
		switch *fc.RecoverUndecidableDamage {
		case "refuse":
			sc.OnUndecidableDamage = engine.DamageRefuse
		case "truncate":
			sc.OnUndecidableDamage = engine.DamageTruncate
		case "skip":
			sc.OnUndecidableDamage = engine.DamageSkip
		default:
			return fmt.Errorf("%w: recoverUndecidableDamage %q is not refuse, truncate or skip", ErrConfig, *fc.RecoverUndecidableDamage)
		}
	}
	if fc.FlushDiskType != nil {
		switch *fc.FlushDiskType {
		case "ASYNC_FLUSH":
			sc.FlushDiskType = engine.AsyncFlush
		case "SYNC_FLUSH":
			sc.FlushDiskType = engine.SyncFlush
		default:
			return fmt.Errorf("%w: flushDiskType %q is not ASYNC_FLUSH or SYNC_FLUSH", ErrConfig, *fc.FlushDiskType)
		}
	}
	for _, v := range []*int64{fc.MapedFileSizeCommitLog, fc.MappedFileSizeCommitLog} {
		if v != nil {
			sc.CommitLogFileSize = *v
		}
	}
	for _, v := range []*int64{fc.MapedFileSizeConsumeQueue, fc.MappedFileSizeConsumeQueue} {
		if v != nil {
			if *v <= 0 || *v%engine.CQUnitSize != 0 {
				return fmt.Errorf("%w: mapedFileSizeConsumeQueue %d is not a positive multiple of %d", ErrConfig, *v, engine.CQUnitSize)
			}
			sc.ConsumeQueueUnits = *v / engine.CQUnitSize
		}
	}
	if fc.MaxMessageSize != nil {
		if *fc.MaxMessageSize <= 0 {
			return fmt.Errorf("%w: maxMessageSize %d must be positive (RocketMQ's default is 4194304)", ErrConfig, *fc.MaxMessageSize)
		}
		sc.MaxMessageSize = *fc.MaxMessageSize
	}
	for _, t := range []struct {
		name string
		v    *int
		dst  *int
	}{
		{"maxTransferBytesOnMessageInMemory", fc.MaxTransferBytesOnMessageInMemory, &sc.MaxTransferBytesOnMessageInMemory},
		{"maxTransferCountOnMessageInMemory", fc.MaxTransferCountOnMessageInMemory, &sc.MaxTransferCountOnMessageInMemory},
		{"maxTransferBytesOnMessageInDisk", fc.MaxTransferBytesOnMessageInDisk, &sc.MaxTransferBytesOnMessageInDisk},
		{"maxTransferCountOnMessageInDisk", fc.MaxTransferCountOnMessageInDisk, &sc.MaxTransferCountOnMessageInDisk},
	} {
		if t.v == nil {
			continue
		}
		if *t.v <= 0 {
			return fmt.Errorf("%w: %s %d must be positive", ErrConfig, t.name, *t.v)
		}
		*t.dst = *t.v
	}
	if fc.MessageDelayLevel != nil {
		levels, err := schedule.ParseLevels(*fc.MessageDelayLevel)
		if err != nil {
			return fmt.Errorf("%w: messageDelayLevel: %w", ErrConfig, err)
		}
		sc.DelayLevels = levels
	}
	if fc.SyncFlushTimeout != nil {
		sc.SyncFlushTimeout = ms(*fc.SyncFlushTimeout)
	}
	if fc.FlushIntervalCommitLog != nil {
		sc.FlushIntervalCommitLog = ms(*fc.FlushIntervalCommitLog)
	}
	if fc.FlushCommitLogLeastPages != nil {
		sc.FlushCommitLogLeastPages = *fc.FlushCommitLogLeastPages
	}
	if fc.FlushIntervalConsumeQueue != nil {
		sc.FlushIntervalConsumeQueue = ms(*fc.FlushIntervalConsumeQueue)
	}
	if fc.FlushConsumeQueueThoroughInterval != nil {
		sc.FlushConsumeQueueThoroughInterval = ms(*fc.FlushConsumeQueueThoroughInterval)
	}
	bc := &nc.Broker
	if fc.AutoCreateTopicEnable != nil {
		bc.DisableAutoCreateTopic = !*fc.AutoCreateTopicEnable
	}
	if fc.AutoCreateSubscriptionGroup != nil {
		bc.DisableAutoCreateSubscriptionGroup = !*fc.AutoCreateSubscriptionGroup
	}
	if fc.DefaultTopicQueueNums != nil {
		bc.DefaultTopicQueueNums = *fc.DefaultTopicQueueNums
	}
	if fc.BrokerPermission != nil {
		bc.BrokerPermission = *fc.BrokerPermission
	}
	if fc.LongPollingEnable != nil {
		bc.ShortPolling = !*fc.LongPollingEnable
	}
	if fc.ShortPollingTimeMills != nil {
		bc.ShortPollingTime = ms(*fc.ShortPollingTimeMills)
	}
	if fc.MessageIndexEnable != nil {
		bc.DisableMessageIndex = !*fc.MessageIndexEnable
	}
	if fc.MaxHashSlotNum != nil {
		if *fc.MaxHashSlotNum < 1 {
			return fmt.Errorf("%w: maxHashSlotNum %d must be at least 1", ErrConfig, *fc.MaxHashSlotNum)
		}
		bc.Index.MaxHashSlotNum = *fc.MaxHashSlotNum
	}
	if fc.MaxIndexNum != nil {
		if *fc.MaxIndexNum < 2 {
			return fmt.Errorf("%w: maxIndexNum %d must be at least 2", ErrConfig, *fc.MaxIndexNum)
		}
		bc.Index.MaxIndexNum = *fc.MaxIndexNum
	}
	if fc.FlushConsumerOffsetInterval != nil {
		bc.FlushConsumerOffsetInterval = ms(*fc.FlushConsumerOffsetInterval)
	}
	if fc.FlushDelayOffsetInterval != nil {
		bc.FlushDelayOffsetInterval = ms(*fc.FlushDelayOffsetInterval)
	}
	fc.FeatureKeys.apply(bc, fc.BrokerClusterName)
	fc.TimerKeys.apply(bc)
	if fc.ServerSocketMaxFrameSize != nil {
		nc.Server.Remoting.MaxFrameSize = *fc.ServerSocketMaxFrameSize
	}
	if fc.ServerChannelMaxIdleSeconds != nil {
		nc.Server.Remoting.IdleTimeout = time.Duration(*fc.ServerChannelMaxIdleSeconds) * time.Second
	}
	if fc.ServerMaxConnections != nil {
		nc.Server.Remoting.MaxConns = *fc.ServerMaxConnections
	}
	if fc.ServerMaxReceiveBytes != nil {
		nc.Server.Remoting.MaxReceiveBytes = *fc.ServerMaxReceiveBytes
	}
	fc.ConnectionKeys.apply(&nc.Server.Remoting)
	if err := fc.applySecurity(&nc.Server.Security); err != nil {
		return err
	}
	if err := nc.Broker.Validate(); err != nil {
		return err
	}
	return nc.Server.Validate()
}

// applyCluster sets the name-server registration keys: namesrvAddr,
// brokerId, and the HA address from brokerIP2 (or brokerIP1) and
// haListenPort.
func (fc *FileConfig) applyCluster(nc *NodeConfig) error {
	if fc.NamesrvAddr != nil {
		addrs, err := ParseNamesrvAddr(*fc.NamesrvAddr)
		if err != nil {
			return err
		}
		nc.Server.NamesrvAddr = addrs
	}
	if fc.BrokerID != nil {
		nc.Server.BrokerID = *fc.BrokerID
	}
	if fc.HAListenPort != nil {
		host := "127.0.0.1"
		for _, h := range []*string{fc.BrokerIP1, fc.BrokerIP2} {
			if h != nil {
				host = *h
			}
		}
		nc.Server.HAServerAddr = net.JoinHostPort(host, strconv.Itoa(*fc.HAListenPort))
	}
	return nil
}
