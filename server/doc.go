// Package server is a RocketMQ 4.x name server and broker in one process:
// it maps the remoting protocol's request codes onto the broker layer so
// that the official RocketMQ clients produce to and consume from a
// rocketstore store.
//
// Roles and codes:
//
//	producer     SEND_MESSAGE 10, SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320
//	consumer     PULL_MESSAGE 11 (long polling), QUERY_CONSUMER_OFFSET 14,
//	             UPDATE_CONSUMER_OFFSET 15, SEARCH_OFFSET_BY_TIMESTAMP 29,
//	             GET_MAX_OFFSET 30, GET_MIN_OFFSET 31, HEART_BEAT 34,
//	             UNREGISTER_CLIENT 35, CONSUMER_SEND_MSG_BACK 36,
//	             GET_CONSUMER_LIST_BY_GROUP 38, LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42
//	tools        QUERY_MESSAGE 12, VIEW_MESSAGE_BY_ID 33,
//	             UPDATE_AND_CREATE_TOPIC 17, DELETE_TOPIC_IN_BROKER 215
//	to clients   NOTIFY_CONSUMER_IDS_CHANGED 40 (one-way) when a group's
//	             membership changes
//	admin        mqadmin's and the dashboard's codes, answered by package
//	             adminapi (bodies in package admin): 21, 25, 26, 28, 43,
//	             45, 61, 200-204, 207, 208, 222, 223, 300, 303, 305, 307,
//	             308, 309, 314, 315, 317, 321; name server 318, 319
//	name server  package namesrv's handlers: 103-106, 206, 216 and the
//	             admin codes 100-102, 205, 219, 224, 304, 322, 327
//
// Every other code is answered REQUEST_CODE_NOT_SUPPORTED (3). A request
// whose header lacks a required field, or has one that does not parse, is
// answered SYSTEM_ERROR (1) with the field named in the remark, as the Java
// broker answers a RemotingCommandException. JSON bodies are decoded as
// the Java broker's fastjson decodes them (lenient.go), and every refused
// header or body field is logged at WARN with its name and value.
//
// Config.Role runs both roles (the default), the broker only, or the name
// server only. A broker with Config.NamesrvAddr registers with those name
// servers (registrar.go); a name server keeps the registered broker groups
// and merges their queues into each topic's route (package server/namesrv,
// registry and handlers; namesrvlocal.go shows it the in-process broker in
// the single-node default).
//
// Layers: this package is the broker front (connections, clients, sends,
// pulls, offsets, locks, security, the registrar) and the assembly of the
// roles; server/adminapi and server/namesrv import neither it nor each
// other, and reach the server's state only through the funcs they declare
// (adminapi.Host, namesrv.Host, namesrv.Local). Metrics come
// in as the Metrics interface, which cmd/rocketstore fills with package
// metrics/prom, so that an embedder of this package does not link the
// Prometheus client.
//
// Clients are tracked by heartbeat: a client is registered in the groups
// of its heartbeat and expires when its connection closes or when it has
// not sent a heartbeat for Config.ChannelExpiry (RocketMQ: 120 s); either
// way the group's remaining clients are notified. Orderly consumers lock
// queues with LOCK_BATCH_MQ; a lock expires after Config.LockExpiry (60 s)
// without renewal, and the locks of a client whose connection closed are
// released at once.
//
// Concurrency: the remoting layer runs each request in its own goroutine.
// A pull that finds nothing is held in a goroutine of its own (so held
// pulls never occupy the connection's request slots) and answered later on
// the same connection with the request's opaque. Shutdown answers every
// held pull (SYSTEM_BUSY, so that clients back off and reconnect), lets running requests finish, and closes the
// connections; it does not close the broker, which the caller owns.
//
// Time: one clock, Config.Clock (a clockwork.Clock; nil means the wall
// clock), handed to adminapi, namesrv, the ACL validator and, unless its
// own is set, the remoting layer. Client, lock and broker expiry, the
// limits' windows and waits and the admin statistics read it, and the
// tickers of the scans, of the registration with the name servers and of
// the statistics sampler run on it: a test on a clockwork.FakeClock
// drives them with Advance (or runs a scan itself, export_test.go),
// never by sleeping until the next tick. The store's record times are the
// broker's clock (engine.Config.Clock), which a test may set to the same
// clock.
package server
