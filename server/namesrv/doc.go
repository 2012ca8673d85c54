// Package namesrv is the name server's registry of broker groups
// (RocketMQ's RouteInfoManager): the brokers that registered, grouped by
// broker name with their members by broker id, each topic's queues per
// group, and the liveness that expires a broker that stops registering
// (BROKER_CHANNEL_EXPIRED_TIME, 120 s). Unlike RocketMQ's it forgets no
// broker because its connection closed (RouteTable.ConnClosed says why).
//
// It also holds the name server's JSON bodies (wire.go) and its request
// handlers (Handlers, DefaultRequestProcessor's): routes, cluster info and
// topic lists (routehandlers.go), REGISTER_BROKER and UNREGISTER_BROKER
// (registerhandlers.go), the admin codes that read or change the registry
// (adminhandlers.go) and the KV config (kvconfig.go). Package server
// routes them in the name-server role and hands in two things: the
// lenient JSON decoding of the bodies, which its broker front shares
// (Host), and in the single-node default the in-process broker, merged
// into the routes without a registration (Local).
//
// Concurrency: a RouteTable and Handlers are safe for concurrent use;
// every method takes its lock for the call only, and returned values are
// copies.
package namesrv
