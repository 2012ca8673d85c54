// Package proxy is the RocketMQ 5.x front of a rocketstore broker: the
// gRPC service apache.rocketmq.v2.MessagingService, which every RocketMQ
// client released since 5.0 speaks, answered from the same broker, topics
// and store as the 4.x remoting server (package server).
//
// It plays RocketMQ 5.x's proxy in "local" mode: QueryRoute answers the
// gRPC endpoint itself for every queue, sends go to broker.SendMessage,
// transactions to the broker's transaction service, pull-consumer offsets
// to the broker's consumer offsets. Status codes are the Code enum of
// definition.proto, mapped from broker response codes as the Java proxy's
// ResponseBuilder maps them (TOPIC_NOT_EXIST → TOPIC_NOT_FOUND, SYSTEM_BUSY
// → TOO_MANY_REQUESTS, a queue without the needed permission → FORBIDDEN,
// an ACL refusal → UNAUTHORIZED).
//
// A delivery timestamp makes a timer message (the broker's timer wheel),
// which RecallMessage cancels by the handle its send answered. Difference
// from RocketMQ 5.x: the lite-topic calls answer UNSUPPORTED.
//
// ACL: the 5.x request signature (metadata authorization "MQv2-HMAC-SHA1
// Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX") is checked
// against the plain_acl.yml accounts of the remoting server, with the
// same topic and group permissions. TLS follows tlsServerMode.
//
// The package imports grpc-go; only the command imports it, so that the
// store's packages stay free of it.
package proxy
