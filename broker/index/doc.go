// Package index is RocketMQ's message index: IndexFiles under index/ that
// map "topic#key" (each KEYS token and UNIQ_KEY) to CommitLog offsets, and
// the IndexService that fills them from the dispatcher and answers
// QUERY_MESSAGE (by key and store-time range).
//
// Files are named by their creation time (yyyyMMddHHmmssSSS), have
// RocketMQ's byte layout (see format.go) and are written through
// backend.FS only.
//
// Recovery: on an abnormal start, a file whose endTimestamp is newer than
// the checkpoint's indexMsgTimestamp may hold torn entries and is deleted
// (RocketMQ's IndexService.load). A record below the current file's
// endPhyOffset is skipped, so replay is idempotent; but for the same reason
// the engine's recovery replay, which starts from its own checkpoint and
// may start after a gap in the index, would make that gap permanent. So
// after an abnormal start the service ignores dispatched records until the
// owner calls Reconcile with the recovered CommitLog range; Reconcile
// returns where to re-dispatch from (the newest durable entry) and starts
// a new file when the index holds entries past the recovered end. The
// service records a file's endTimestamp as the checkpoint's
// indexMsgTimestamp only after the file is synced.
//
// Concurrency: Dispatch runs on the engine's single dispatch goroutine;
// queries run concurrently with it under a read lock.
package index
