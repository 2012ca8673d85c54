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
// (RocketMQ's IndexService.load); the engine's replay re-indexes what it
// replays. A record below the current file's endPhyOffset is skipped, so
// replay is idempotent. The service records a file's endTimestamp as the
// checkpoint's indexMsgTimestamp only after the file is synced.
//
// Concurrency: Dispatch runs on the engine's single dispatch goroutine;
// queries run concurrently with it under a read lock.
package index
