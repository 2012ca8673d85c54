// Package transaction is the broker's transactional-message service
// (RocketMQ 4.3+'s TransactionalMessageServiceImpl, TransactionalMessageBridge,
// EndTransactionProcessor and TransactionalMessageCheckService).
//
// A producer sends a half message: it is stored in RMQ_SYS_TRANS_HALF_TOPIC
// queue 0 with its real topic and queue in the REAL_TOPIC and REAL_QID
// properties, invisible to consumers. END_TRANSACTION commits it (the real
// message is written to its topic, with the commit sysflag and the half's
// CommitLog offset as PreparedTransactionOffset) or rolls it back; either
// way an op record (body: the half's queue offset, tag "d") goes to
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0. A half message still open
// transactionTimeOut after it was born is checked back: it is written
// again at the end of the half queue with TRANSACTION_CHECK_TIMES + 1 and
// CHECK_TRANSACTION_STATE is sent to a producer of its group, every
// transactionCheckInterval, up to transactionCheckMax times; then it is
// discarded (copied to TRANS_CHECK_MAX_TIME_TOPIC and ended).
//
// All state is in the CommitLog: at open the service rebuilds it from the
// half and op queues, so that it survives a crash. Unlike RocketMQ (which
// keeps its scan positions as consumer offsets of CID_RMQ_SYS_TRANS, and
// can deliver a committed message twice), the service delivers a committed
// message exactly once:
//   - each rewritten half message carries TRAN_PREPARED_QUEUE_OFFSET, the
//     queue offset of the transaction's first half message, so that every
//     copy belongs to one transaction, and a transaction is ended once
//     (a second commit is acknowledged without a second write);
//   - a commit writes the real message before its op record; a crash
//     between the two is repaired at open by looking for commit records
//     after the oldest open half message (a CommitLog that survives a power
//     cut is a prefix of what was written, so the op record can be lost only
//     with everything after it).
//
// Op records carry a TRAN_OUTCOME property (commit, rollback, discard)
// besides RocketMQ's body and tag, so that a late END_TRANSACTION that
// contradicts the outcome is refused.
package transaction
