package namesrv

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"log/slog"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// Local is the in-process broker that the single-node default (both roles
// and no name server to register with) shows in the routes without a
// registration.
type Local interface {
	// Route returns the broker's route of topic, false when it has no
	// such topic.
	Route(topic string) (TopicRouteData, bool)
	// BrokerData is the broker's group: cluster, name and address.
	BrokerData() BrokerData
	// TopicNames returns the broker's topics.
	TopicNames() []string
	// DataVersion is the version of the broker's topic table.
	DataVersion() config.DataVersion
	// SetWritePerm adds or removes the write permission of the broker's
	// topics but the system ones and returns how many changed.
	SetWritePerm(add bool) (int, error)
	// DeleteTopic answers req as DELETE_TOPIC_IN_BROKER: the topic leaves
	// the broker.
	DeleteTopic(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error)
}

// Host decodes the registration bodies as the Java name server's fastjson
// does, and refuses what it cannot use; the server package has that
// decoder, which its broker front shares.
type Host interface {
	// ParseRegisterBody decodes a REGISTER_BROKER body, zlib-compressed
	// or not; topics is nil when the body sends no topic table.
	ParseRegisterBody(body []byte, compressed bool) (topics map[string]config.TopicConfig, dv config.DataVersion, err error)
	// ParseDataVersion decodes a DataVersion body (QUERY_DATA_VERSION).
	ParseDataVersion(body []byte) (config.DataVersion, error)
	// Refuse answers a request whose header or body cannot be used,
	// logging the field and value.
	Refuse(req *remoting.RemotingCommand, c *remoting.Conn, err error) (*remoting.RemotingCommand, error)
}

// Config is what the name server's handlers answer from.
type Config struct {
	// Routes is the registry of the brokers that registered.
	Routes *RouteTable
	// Local is the in-process broker in the single-node default; nil
	// otherwise.
	Local Local
	// Logger receives registrations and the changes the codes make.
	Logger *slog.Logger
}

// HandlerFunc is the signature of every handler (remoting.Mux.RegisterFunc's).
type HandlerFunc = func(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error)

// Handlers answer the name server's request codes
// (DefaultRequestProcessor's) over a RouteTable and the KV config.
type Handlers struct {
	routes *RouteTable
	local  Local
	log    *slog.Logger
	host   Host
	kv     *kvTable
}

// NewHandlers returns the name server's handlers over cfg.Routes.
func NewHandlers(cfg Config, host Host) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Handlers{routes: cfg.Routes, local: cfg.Local, log: cfg.Logger, host: host, kv: newKVTable()}
}

// Name-server request codes (Java RequestCode) that have no constant in
// package remoting.
const (
	CodeRegisterBroker           int32 = 103
	CodeUnregisterBroker         int32 = 104
	codePutKVConfig              int32 = 100
	codeGetKVConfig              int32 = 101
	codeDeleteKVConfig           int32 = 102
	codeWipeWritePermOfBroker    int32 = 205
	codeGetKVListByNamespace     int32 = 219
	codeGetTopicsByCluster       int32 = 224
	codeGetSystemTopicListFromNs int32 = 304
	codeQueryDataVersion         int32 = 322
	codeAddWritePermOfBroker     int32 = 327
)

// ByCode returns the handler of each request code the name server answers.
func (h *Handlers) ByCode() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.CodeGetRouteInfoByTopic:        h.getRouteInfo,
		remoting.CodeGetBrokerClusterInfo:       h.getClusterInfo,
		remoting.CodeGetAllTopicListFromNamesrv: h.getAllTopicList,
		remoting.CodeDeleteTopicInNamesrv:       h.deleteTopicInNamesrv,
		CodeRegisterBroker:                      h.registerBroker,
		CodeUnregisterBroker:                    h.unregisterBroker,
		codePutKVConfig:                         h.putKVConfig,
		codeGetKVConfig:                         h.getKVConfig,
		codeDeleteKVConfig:                      h.deleteKVConfig,
		codeGetKVListByNamespace:                h.getKVListByNamespace,
		codeWipeWritePermOfBroker:               h.writePermHandler(false),
		codeAddWritePermOfBroker:                h.writePermHandler(true),
		codeGetTopicsByCluster:                  h.getTopicsByCluster,
		codeGetSystemTopicListFromNs:            h.getSystemTopicListFromNs,
		codeQueryDataVersion:                    h.queryDataVersion,
	}
}

// BodyCRC32 is RocketMQ's UtilAll.crc32: CRC-32 (IEEE) masked to 31 bits,
// the bodyCrc32 header of REGISTER_BROKER.
func BodyCRC32(b []byte) int32 { return int32(crc32.ChecksumIEEE(b) & 0x7FFFFFFF) }

// badRequest answers a request whose header cannot be used, as the Java
// name server answers a RemotingCommandException: SYSTEM_ERROR with the
// reason.
func badRequest(req *remoting.RemotingCommand, err error) (*remoting.RemotingCommand, error) {
	return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
}

// jsonBody answers SUCCESS with v as the JSON body.
func jsonBody(req *remoting.RemotingCommand, v any) (*remoting.RemotingCommand, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}

// adminBody answers SUCCESS with v in fastjson form, as the Java name
// server writes its admin bodies.
func adminBody(req *remoting.RemotingCommand, v any) (*remoting.RemotingCommand, error) {
	body, err := admin.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}
