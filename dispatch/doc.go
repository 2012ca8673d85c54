// Package dispatch replays the CommitLog into its derived structures: the
// ConsumeQueues, the message index and the arrival hook that wakes held
// long-poll pulls (RocketMQ's ReputMessageService and CommitLogDispatcher).
//
// Its core, Parser.Parse, is a pure function from CommitLog bytes to a
// Request, tested without files. Service runs it in one goroutine from
// reputFromOffset to the end of the published log, woken by each put
// through Wake rather than by polling, and calls every registered
// Dispatcher in order for each record. Dispatchers must be idempotent:
// recovery replays records that may already be dispatched.
package dispatch
