// Package adminapi answers the broker's admin request codes: what mqadmin,
// the dashboard and rocketstore's own admin commands send to inspect and
// steer a broker (topic and group tables, runtime info and statistics,
// consume stats, offset resets and clones, calls forwarded to a consumer).
// Package admin holds the other side, the bodies and the client that sends
// these codes; this package is the server side of it, hence the name.
//
// Package server owns the connections and the clients' registrations: it
// builds an API over its broker with New, hands in what only it knows
// through Host, and routes the codes of Handlers on its mux. The name
// server's admin codes (KV config, write permission, topics by cluster) are
// package namesrv's, beside the name server's registry.
//
// Codes: 21, 25, 26, 28, 43, 45, 61, 200-204, 207, 208, 300, 303, 305,
// 307, 308, 309, 314, 315, 317, 321, 222 and 223 (sent on to the group's
// clients), and the name server's config codes 318 and 319. The admin
// codes that RocketMQ 4.x brokers do not serve either (Unsupported) are
// answered REQUEST_CODE_NOT_SUPPORTED with what to use instead.
//
// Time: Config.Clock, the server's clock (nil means the wall clock): the
// statistics, the reported times and the sampler's ticker follow it, so a
// test on a fake clock either advances it or takes a sample at its time
// with Sample.
//
// Concurrency: the handlers run in the remoting server's request
// goroutines and are safe for concurrent use. Start runs one sampler
// goroutine (the statistics behind GET_BROKER_RUNTIME_INFO and
// VIEW_BROKER_STATS_DATA, a sample a second); Close stops it and waits for
// it.
package adminapi
