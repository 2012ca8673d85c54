// Package namesrv is the name server's registry of broker groups
// (RocketMQ's RouteInfoManager): the brokers that registered, grouped by
// broker name with their members by broker id, each topic's queues per
// group, and the liveness that expires a broker that stops registering
// (BROKER_CHANNEL_EXPIRED_TIME, 120 s). Unlike RocketMQ's it forgets no
// broker because its connection closed (RouteTable.ConnClosed says why).
//
// It also holds the name server's JSON bodies (wire.go). The request
// handlers that decode REGISTER_BROKER and answer routes are the server
// package's, which merges the in-process broker into the routes in the
// single-node default.
//
// Concurrency: a RouteTable is safe for concurrent use; every method
// takes its lock for the call only, and returned values are copies.
package namesrv
