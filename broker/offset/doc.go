// Package offset holds consumer offsets (RocketMQ's ConsumerOffsetManager):
// a table "topic@group" → queue id → next offset to consume, persisted to
// config/consumerOffset.json as {"offsetTable":{"T@G":{"0":250}}}.
//
// Commits are unconditional puts, as in RocketMQ, so offsets can go
// backwards (a smaller value is logged). Persistence is the owner's job:
// the broker calls Persist every flushConsumerOffsetInterval and on Close;
// Persist writes only when something changed since the last save.
//
// Concurrency: every method is safe for concurrent use; Persist
// serialises saves.
package offset
