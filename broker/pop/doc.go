// Package pop is pop consumption in the store (RocketMQ 5.x's
// PopMessageProcessor, AckMessageProcessor,
// ChangeInvisibleTimeProcessor and PopReviveService): the model behind
// the 5.x SimpleConsumer and PushConsumer.
//
// # API (what the gRPC MessagingService calls)
//
//	ReceiveMessage           Service.Receive(ctx, ReceiveRequest{Group, Topic, QueueID or AllQueues,
//	                                         Filter, Max, InvisibleTime, FIFO, PollTime}) -> []Message
//	AckMessage               Service.AckBatch(ctx, group, topic, handles) -> one error per handle
//	                         (Service.Ack for one)
//	ChangeInvisibleDuration  Service.ChangeInvisibleDuration(ctx, group, topic, handle, d) -> new Handle
//	ForwardMessageToDeadLetterQueue  Service.ForwardToDeadLetter(ctx, group, topic, handle)
//	(background)             Service.Revive: the revive pass (its own goroutine unless manual)
//
// The broker opens the service: broker.Broker.Pop returns it (with the
// group's retryMaxTimes + 1 as maxDeliveryAttempts, the send-back path to
// the DLQ, the shared consumer offsets and the arrival notification for
// long polling). FIFO is the caller's choice: RocketMQ 5.x delivers in
// order when the group has consumeMessageOrderly
// (config.SubscriptionGroupConfig.ConsumeMessageOrderly) and the topic's
// message.type is FIFO (config.TopicConfig.MessageType). The send-side
// type check is config.CheckMessageType(topic.MessageType(),
// config.MessageTypeOf(properties)), which answers
// MESSAGE_PROPERTY_CONFLICT_WITH_TYPE's text.
//
// A Message is the stored message (a copy, ReconsumeTimes = Attempt-1),
// its delivery Attempt (1 for the first delivery; gRPC's
// delivery_attempt) and its Handle, whose String (Message.ReceiptHandle,
// made for the whole batch at once) is the receipt handle
// to give the client (RocketMQ 5.x's ReceiptHandle layout, nine fields
// separated by spaces: ckQueueOffset popTime invisibleTime reviveQueueId
// topicType brokerName queueId queueOffset commitLogOffset). ParseHandle
// reads it back (eight fields too).
// Errors: ErrBadRequest (an argument out of range), ErrBadHandle (a
// handle that does not parse: gRPC INVALID_RECEIPT_HANDLE), ErrStaleHandle
// (the delivery is over: acked, dead-lettered, or delivered again since;
// RocketMQ's proxy answers INVALID_RECEIPT_HANDLE too), ErrClosed, and
// store errors (wrapped). With PollTime, Receive long-polls: it waits for
// an arrival on the topic (Config.Arrivals, a dispatcher of the store) or
// for an in-flight message's invisible time to end, up to PollTime;
// without, an empty result means no message now.
//
// # Model
//
// A group's pop of a queue has a position (the next offset to read) and
// entries: messages delivered and not yet acked (in flight, with the
// attempt and the deadline when their invisible time ends), and, for FIFO
// receives, messages held back behind an earlier message of their message
// group. Offsets below the position without an entry are done for the
// group (acked, moved to the DLQ, or filtered out). A receive first
// redelivers in-flight messages whose invisible time ended, counting the
// attempt, then reads new messages from the position. A message whose
// invisible time ends at its group's last attempt (maxDeliveryAttempts =
// retryMaxTimes + 1, 17 by default) is stored in the group's DLQ
// (%DLQ%group) by the revive pass or the next receive of its queue.
//
// Redelivery is in place: the message is delivered again from its own
// queue, unlike RocketMQ, which writes a copy into %RETRY%group_topic; the
// client sees the same message id with the next attempt.
//
// # Durability: the revive log
//
// Every change is a record in the revive topic (rmq_sys_REVIVE_LOG_
// followed by the cluster name, queue 0), written through the CommitLog
// like any message while the queue's lock is held: a checkpoint ("ck")
// per receive batch (what was delivered, at which attempt, until when
// invisible; what was held back; which queue range was read), one ack
// record ("bAck") per AckBatch and queue, a change of invisible time
// ("cid"), and a dead-letter record ("dlq"). Open replays the revive
// queue in order; applying a record is idempotent and the live path
// applies the same function after the write, so the recovered state is
// the one the durable records describe. Under SYNC_FLUSH each record is
// durable before the call returns, which gives, across power cuts:
//   - a message is never lost to a group: it is acked, or in the DLQ;
//   - an acked message is redelivered only if its ack was not yet
//     durable (its Ack had not returned);
//   - a delivered message is not redelivered before its invisible time
//     ends (the checkpoint is durable before Receive returns).
//
// Under ASYNC_FLUSH the records are as durable as sends are: a power cut
// can lose the latest ones (then an acked message may come back, and a
// delivered one may be delivered again early).
//
// # Push and pop consumers of one group
//
// As in RocketMQ 5.x, pop and the 4.x pull path share the group's
// consumer offset: a receive starts at the furthest of pop's own position
// and the group's committed offset (Config.CommittedOffset), and records
// its new position as the group's offset (Config.CommitOffset). So the
// furthest position wins: messages a pull consumer committed past are not
// popped, and messages popped are past the offset a pull consumer
// resumes from. Mixing both consumption modes in one group is not
// advised (RocketMQ's words too); in-flight pop messages are redelivered
// to pop consumers only.
//
// # FIFO
//
// With ReceiveRequest.FIFO, a queue delivers only the first unfinished
// message of each message group (property __SHARDINGKEY; messages
// without one form one group), and none while it is in flight: the next
// message of a group waits for the ack (or the DLQ) of the one before.
// Different groups progress in parallel. Messages read behind a busy
// group are held (at most Config.MaxHeld a queue) and recorded in the
// checkpoint, so that a recovery keeps them.
//
// # Snapshots
//
// Every Config.CompactEvery records (100,000) the revive pass writes a
// snapshot (Compact): a start record, then each queue's whole state, and,
// once they are durable, the start's offset in config/popReplayFrom.json;
// Open replays from there. Retention then removes the records before it
// with their CommitLog files. A replica of a replicated group that starts
// leading calls Reload (the records reached its store through the
// group's log).
package pop
