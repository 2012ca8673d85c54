package adminapi

import (
	"context"
	"log/slog"
	"regexp"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// Config is what an API answers from.
type Config struct {
	// Broker is the broker the codes inspect and steer; nil in a name
	// server without a broker, which routes none of the broker's codes.
	Broker *broker.Broker
	// ClusterName and BrokerName are the broker's names in RocketMQ's
	// tables.
	ClusterName, BrokerName string
	// Clock is the clock of the statistics, of the reported times and of
	// the sampler's ticker; nil means the wall clock.
	Clock clockwork.Clock
	// Logger receives the changes the codes make and the clients that do
	// not answer.
	Logger *slog.Logger
}

// Consumer is one online consumer client of a group, with what its last
// heartbeat said.
type Consumer struct {
	ClientID string
	// Conn is the client's connection, on which GET_CONSUMER_RUNNING_INFO
	// and the offset resets are sent to it.
	Conn     *remoting.Conn
	Language string
	Version  int32
	// ConsumeType, MessageModel and ConsumeFromWhere are the group's
	// settings by their Java enum names ("" before a consumer heartbeat).
	ConsumeType, MessageModel, ConsumeFromWhere string
}

// Host is what the API needs from the server that owns the connections:
// the clients' registrations, the advertised address and the server's
// decoding of request bodies. Every field must be set.
//
// A struct of funcs rather than an interface: an interface value would
// make the server's whole method set reachable to the deadcode gate's
// analysis (through the reflection a value in an interface allows), and
// hide the server's dead methods from it.
type Host struct {
	// BrokerAddr is the address routes advertise.
	BrokerAddr func() string
	// StoreDir is the store's directory ("" for a store not on disk).
	StoreDir func() string
	// Consumers returns the group's online consumers, sorted by client id.
	Consumers func(group string) []Consumer
	// ConsumerGroupsOnline returns the groups with an online consumer,
	// sorted.
	ConsumerGroupsOnline func() []string
	// ProducerConnections returns a producer group's connections, false
	// when no producer of the group sent a heartbeat.
	ProducerConnections func(group string) ([]admin.Connection, bool)
	// ParseSubscriptionGroup decodes a SubscriptionGroupConfig body as the
	// Java broker's fastjson does.
	ParseSubscriptionGroup func(body []byte) (config.SubscriptionGroupConfig, error)
	// Refuse answers a request whose body cannot be used, logging the
	// field and value.
	Refuse func(req *remoting.RemotingCommand, c *remoting.Conn, err error) (*remoting.RemotingCommand, error)
}

// HandlerFunc is the signature of every handler (remoting.Mux.RegisterFunc's).
type HandlerFunc = func(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error)

// API answers the admin codes of one broker.
type API struct {
	b    *broker.Broker
	cfg  Config
	log  *slog.Logger
	host Host

	stats     *statsTable
	stop      chan struct{}
	stopOnce  sync.Once
	statsDone chan struct{}
}

// New returns an API over cfg.Broker; its statistics start with Start.
func New(cfg Config, host Host) *API {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &API{b: cfg.Broker, cfg: cfg, log: cfg.Logger, host: host, stats: newStatsTable(cfg.Clock.Now()),
		stop: make(chan struct{}), statsDone: make(chan struct{})}
}

// Start starts the statistics sampler.
func (a *API) Start() { go a.statsLoop() }

// Close stops the sampler and waits for it; call it after Start. It is
// idempotent (the server's Shutdown and Close both call it).
func (a *API) Close() {
	a.stopOnce.Do(func() { close(a.stop) })
	<-a.statsDone
}

// Handlers returns the handler of each admin code by request code.
func (a *API) Handlers() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		codeGetAllTopicConfig:               a.getAllTopicConfig,
		codeUpdateBrokerConfig:              a.updateConfig,
		codeGetBrokerConfig:                 a.getBrokerConfig,
		codeGetBrokerRuntimeInfo:            a.getBrokerRuntimeInfo,
		codeGetTimerMetrics:                 a.getTimerMetrics,
		codeGetAllConsumerOffset:            a.getAllConsumerOffset,
		codeGetAllDelayOffset:               a.getAllDelayOffset,
		codeUpdateAndCreateSubscriptionGrp:  a.updateAndCreateSubscriptionGroup,
		codeGetAllSubscriptionGroupConfig:   a.getAllSubscriptionGroup,
		codeGetTopicStatsInfo:               a.getTopicStatsInfo,
		codeGetConsumerConnectionList:       a.getConsumerConnectionList,
		codeGetProducerConnectionList:       a.getProducerConnectionList,
		codeDeleteSubscriptionGroup:         a.deleteSubscriptionGroup,
		codeGetConsumeStats:                 a.getConsumeStats,
		codeInvokeBrokerToResetOffset:       a.invokeBrokerToResetOffset,
		codeInvokeBrokerToGetConsumerStatus: a.invokeBrokerToGetConsumerStatus,
		codeQueryTopicConsumeByWho:          a.queryTopicConsumeByWho,
		codeQueryConsumeTimeSpan:            a.queryConsumeTimeSpan,
		codeGetSystemTopicListFromBroker:    a.getSystemTopicListFromBroker,
		remoting.CodeGetConsumerRunningInfo: a.getConsumerRunningInfo,
		codeQueryCorrectionOffset:           a.queryCorrectionOffset,
		remoting.CodeConsumeMessageDirectly: a.consumeMessageDirectly,
		codeCloneGroupOffset:                a.cloneGroupOffset,
		codeViewBrokerStatsData:             a.viewBrokerStatsData,
		codeGetBrokerConsumeStats:           a.getBrokerConsumeStats,
		codeUpdateNamesrvConfig:             a.updateConfig,
		codeGetNamesrvConfig:                a.getNamesrvConfig,
		codeQueryConsumeQueue:               a.queryConsumeQueue,
	}
}

// Admin request codes (RocketMQ 4.9's RequestCode) that Handlers serves.
const (
	codeGetAllTopicConfig              int32 = 21
	codeUpdateBrokerConfig             int32 = 25
	codeGetBrokerConfig                int32 = 26
	codeGetBrokerRuntimeInfo           int32 = 28
	codeGetAllConsumerOffset           int32 = 43
	codeGetAllDelayOffset              int32 = 45
	codeGetTimerMetrics                int32 = 61 // RocketMQ 5.x
	codeUpdateAndCreateSubscriptionGrp int32 = 200
	codeGetAllSubscriptionGroupConfig  int32 = 201
	codeGetTopicStatsInfo              int32 = 202
	codeGetConsumerConnectionList      int32 = 203
	codeGetProducerConnectionList      int32 = 204
	codeDeleteSubscriptionGroup        int32 = 207
	codeGetConsumeStats                int32 = 208
	codeQueryTopicConsumeByWho         int32 = 300
	codeQueryConsumeTimeSpan           int32 = 303
	codeGetSystemTopicListFromBroker   int32 = 305
	codeQueryCorrectionOffset          int32 = 308
	codeCloneGroupOffset               int32 = 314
	codeViewBrokerStatsData            int32 = 315
	codeGetBrokerConsumeStats          int32 = 317
	codeUpdateNamesrvConfig            int32 = 318
	codeGetNamesrvConfig               int32 = 319
	codeQueryConsumeQueue              int32 = 321
)

// validName is TopicValidator's allowed character set, which group names
// follow too.
var validName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// badRequest answers a request whose header or body cannot be used, as
// the Java broker answers a RemotingCommandException: SYSTEM_ERROR with the
// reason.
func badRequest(req *remoting.RemotingCommand, err error) (*remoting.RemotingCommand, error) {
	return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
}

// reply answers with a broker response code and remark.
func reply(req *remoting.RemotingCommand, code broker.ResponseCode, remark string) *remoting.RemotingCommand {
	return req.NewResponse(int32(code), remark)
}
