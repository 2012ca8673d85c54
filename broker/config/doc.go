// Package config holds the broker's topic and subscription-group tables
// (RocketMQ's TopicConfigManager and SubscriptionGroupManager), their
// auto-creation rules, and their persistence as config/topics.json and
// config/subscriptionGroup.json in RocketMQ's format:
//
//	{"dataVersion":{"counter":3,"timestamp":1551626364371},
//	 "topicConfigTable":{"TopicTest":{"topicName":"TopicTest","readQueueNums":4,...}}}
//
// Concurrency: every manager method is safe for concurrent use. Lookups
// return copies; changes go through the manager and are saved before the
// method returns.
package config
