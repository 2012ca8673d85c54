// Package timer delivers RocketMQ 5.x timer messages: a message that
// carries its delivery time (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
// TIMER_DELAY_MS or __STARTDELIVERTIME) is stored at once in the timer
// topic rmq_sys_wheel_timer (Transform, called by the broker before the
// put) and becomes visible in its real topic and queue at its time.
//
// As RocketMQ's TimerMessageStore, the service keeps its pending messages
// in files, not in memory:
//
//   - the TimerLog (timerlog/), an append-only log of fixed-size units,
//     each pointing at one timer-topic record of the CommitLog; the units
//     of one delivery time are chained backwards;
//   - the TimerWheel (timerwheel), one fixed-size slot per delivery time
//     modulo the wheel's length: the slot's time, its first and last
//     TimerLog unit and its count;
//   - the checkpoint (config/timercheck.json): the timer-topic
//     ConsumeQueue offset enqueued up to, the next slot to deliver, the
//     TimerLog end, and the redo list of the wheel slots changed since the
//     previous checkpoint.
//
// One goroutine enqueues new timer-topic messages into the TimerLog and
// the wheel, delivers every slot whose time has come (the slot's recalls
// first: a message whose delete key a recall of the same slot names is
// dropped), and takes a checkpoint between slots. Memory is bounded: the
// wheel slots changed since the last checkpoint, the units of the slot
// being delivered, and the source offsets of deliveries a crash left
// unaccounted for.
//
// # Timing
//
// A delivery time is rounded up to the precision (timerPrecisionMs), so a
// message is never delivered early and at most one precision plus the
// delivery work late. RocketMQ rounds down and may deliver up to one
// precision early; a recall handle carries the rounded time.
//
// # Crash safety
//
// A checkpoint is a snapshot of the state, written by a goroutine of its
// own while delivery goes on, in this order: sync the CommitLog (the
// deliveries it counts are durable), sync the TimerLog, save the
// checkpoint with its redo list atomically, then write the redo list into
// the wheel file and sync it. Recovery truncates the TimerLog to the checkpoint's end,
// re-applies the redo list (so the wheel never points past the TimerLog),
// enqueues again from the checkpoint's queue offset and delivers again
// from its slot. Every delivery carries TIMER_SOURCE_OFFSET; recovery
// reads the CommitLog written since the checkpoint (never the whole
// CommitLog) for these, and skips the deliveries it finds, so that a
// message is delivered exactly once.
//
// # Replicated groups
//
// Only the leader delivers (Config.Put replicates its puts). A replica on
// standby follows it: it enqueues the replicated timer topic into its own
// TimerLog and wheel (so its pending counts are the leader's, a step
// behind), reads the replicated CommitLog for the leader's deliveries,
// and moves its read time past each due slot once every message of it
// is delivered; its checkpoints advance as the leader's do. Elected, it
// first reads the deliveries its last step did not see (the node applies
// every committed entry before it takes writes), then delivers from its
// read time and skips what it saw delivered: a failover neither delivers
// a message twice nor loses one. A slot the leader could not deliver
// (the store refused a message for good) holds a replica's read time
// until its election; the replica delivers it then.
//
// Concurrency: Dispatch never blocks; Pending, ReadTime and the recall
// checks are safe for concurrent use; in Manual mode the owner calls
// Advance and Checkpoint from one goroutine.
package timer
