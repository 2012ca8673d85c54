// Package broker is the consumption layer of a RocketMQ 4.x broker on top
// of the store engine: topic and subscription-group configuration, pull
// processing with long polling, consumer offsets, send-back with retry and
// dead-letter topics, delayed delivery, and the message index.
//
// It is a Go API that a wire-protocol server calls one to one:
//
//	PULL_MESSAGE (11)                  Broker.Pull
//	QUERY_MESSAGE (12)                 Broker.QueryMessage
//	QUERY_CONSUMER_OFFSET (14)         Broker.QueryConsumerOffset
//	UPDATE_CONSUMER_OFFSET (15)        Broker.UpdateConsumerOffset
//	UPDATE_AND_CREATE_TOPIC (17)       Broker.Topics().Update
//	GET_MAX_OFFSET / GET_MIN_OFFSET    Broker.Store().MaxOffsetInQueue / MinOffsetInQueue
//	VIEW_MESSAGE_BY_ID (33)            Broker.Store().LookMessageByMsgID
//	HEART_BEAT (34)                    Broker.Heartbeat
//	UNREGISTER_CLIENT (35)             Broker.Unregister
//	CONSUMER_SEND_MSG_BACK (36)        Broker.SendMsgBack
//	UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200)  Broker.Groups().Update
//	DELETE_SUBSCRIPTIONGROUP (207)     Broker.DeleteSubscriptionGroup
//
// Open takes the backend.FS the store lives on and opens the engine itself,
// passing it the dispatchers that run after the ConsumeQueue builder: the
// index builder, the long-poll arrival hooks and the wake-ups of delayed
// delivery and of the timer service.
//
// Background work: one goroutine persists consumer offsets every
// FlushConsumerOffsetInterval and delay offsets every
// FlushDelayOffsetInterval; one delivers delayed messages; one delivers
// timer messages (broker/timer: a send with TIMER_DELIVER_MS,
// TIMER_DELAY_SEC, TIMER_DELAY_MS or __STARTDELIVERTIME goes to
// rmq_sys_wheel_timer and its answer carries a recall handle; Recall
// cancels it). Held pulls wait
// in their callers' goroutines. Close stops everything, persists the
// offsets, closes the engine and the index, and leaves no goroutine.
//
// With the store in manual mode (internal/hooks: the module's tests and
// tools only) the broker starts no goroutine either: the
// owner calls PersistConsumerOffsets, PersistDelayOffsets (or
// PersistOffsets) and DeliverDelayed, as deterministic tests do. Abandon
// stops a broker as a killed process would (nothing persisted or synced);
// on memfs, reopening on memfs.New(sameAfero) is then a power cut.
//
// Crash guarantees (P7): consumer offsets and delay offsets come back as
// last persisted, clamped to their queues; delay offsets are persisted only
// after the CommitLog is synced, so a delayed message is delivered at least
// once across power cuts; after an abnormal start the index is re-built
// from the CommitLog where it lost entries (index.Service.Reconcile).
//
// A pull answered with PULL_OFFSET_MOVED publishes an OffsetMovedEvent to
// OFFSET_MOVED_EVENT, as a RocketMQ master does.
//
// Concurrency: all Broker methods are safe for concurrent use.
package broker
