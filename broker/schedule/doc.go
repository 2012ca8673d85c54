// Package schedule delivers delayed messages (RocketMQ's
// ScheduleMessageService). The engine stores a message with a DELAY level
// in SCHEDULE_TOPIC_XXXX, queue level−1, with its deliver time as the
// ConsumeQueue tagsCode; this service reads each level's queue from its
// offset and, when a message is due, puts it to REAL_TOPIC / REAL_QID with
// DELAY cleared.
//
// Timing: one goroutine sleeps exactly until the earliest due time among
// the level heads, or until the dispatcher hook (Dispatch) reports a new
// delayed message, so a message is delivered within milliseconds of its
// due time (our choices table), in due order across levels.
//
// Offsets: level → next ConsumeQueue offset, persisted to
// config/delayOffset.json ({"offsetTable":{"1":12}}) by Persist, which the
// broker calls every flushDelayOffsetInterval and on Close. An offset moves
// only after the delivered put returned, so a crash redelivers (at least
// once) and never skips. On start offsets are clamped to the queues'
// [min, max].
//
// Concurrency: Dispatch never blocks; the other methods are safe for
// concurrent use.
package schedule
