// Package admin is the RocketMQ 4.x admin protocol: the JSON bodies that
// mqadmin and rocketmq-dashboard exchange with name servers and brokers
// (TopicStatsTable, ConsumeStats, ConsumerConnection, KVTable, ...), their
// fastjson wire form, and a Client that speaks it over the remoting
// protocol, so that the same code drives rocketstore and any RocketMQ 4.x
// cluster.
//
// RocketMQ's broker serializes bodies with fastjson, which writes fields in
// alphabetical order, map keys that are integers bare ({0:12}) and map keys
// that are objects as objects ({{"brokerName":"b","queueId":0,"topic":"t"}:
// {...}}). That is not JSON; Marshal writes it and Unmarshal reads it (as
// well as plain JSON), as the Java tools and the Go client's reset-offset
// parser expect.
package admin
