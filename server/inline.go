package server

import "github.com/rocketstore/rocketstore/remoting"

// inlineRequest is the remoting Options.Inline of a broker: sends are
// answered on the connection's read goroutine when they cannot wait (async
// flush, no replication, no per-connection rate limit whose token wait
// would hold the reader), which saves the handoff to a worker per message
// (under the official Go client: 4-13 % less server CPU a message and a
// lower send→consume median; see BENCHMARKS.md).
// RocketMQ 4.x runs every send on one thread (sendMessageThreadPoolNums =
// 1), so a send already waits for the sends before it; what changes is
// that a request behind a send on the same connection is read after the
// send's put (microseconds) instead of during it. Sends that may wait,
// pulls (which read the store and may be held) and everything else keep
// going to the connection's workers.
func (s *Server) inlineRequest(req *remoting.RemotingCommand) bool {
	return s.inlineSends && isSendCode(req.Code)
}

// orderedRequest is the remoting Options.Ordered of a broker: the
// consumer-manage codes (offset commits and queries, the group's consumer
// list) are served one at a time in the order the connection sent them,
// as RocketMQ 4.x serves them from its consumerManageExecutor's FIFO
// queue. A commit is then seen by the query (QUERY_CONSUMER_OFFSET) or
// commit the client sends behind it. Handed to workers, two frames read
// in one go are served in reverse order more often than not (the Go
// scheduler runs the goroutine woken last first), and rocketmq-client-go
// then loses a reset (220): it commits the reset offset and at once
// queries it to pull again, gets its old offset back, and never
// re-delivers that queue (TestOffsetCommitOrderedOnConnection). The
// connection's ordered goroutine, not its reader, waits for a rate
// limiter's token (4.x's fast-failure flow control does not cover this
// executor at all, but our per-connection limit bounds what a hostile
// client costs, so it stays), and the reader goes on with the rest.
func (s *Server) orderedRequest(req *remoting.RemotingCommand) bool {
	switch req.Code {
	case remoting.CodeUpdateConsumerOffset, remoting.CodeQueryConsumerOffset, remoting.CodeGetConsumerListByGroup:
		return true
	}
	return false
}

// canInlineSends reports whether sends qualify for inlineRequest, fixed
// when the server is made.
func (s *Server) canInlineSends() bool {
	if s.b == nil || s.b.PutsWait() {
		return false
	}
	return s.sec == nil || s.sec.limiter == nil
}
