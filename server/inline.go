package server

import "github.com/rocketstore/rocketstore/remoting"

// inlineRequest is the remoting Options.Inline of a broker: sends are
// answered on the connection's read goroutine when they cannot wait (async
// flush, no replication, no per-connection rate limit whose token wait
// would hold the reader), which saves the handoff to a worker per message
// (under the official Go client: 4-13 % less server CPU a message and a
// lower send→consume median, BENCHMARKS.md, fifth session).
// RocketMQ 4.x runs every send on one thread (sendMessageThreadPoolNums =
// 1), so a send already waits for the sends before it; what changes is
// that a request behind a send on the same connection is read after the
// send's put (microseconds) instead of during it. Sends that may wait,
// pulls (which read the store and may be held) and everything else keep
// going to the connection's workers.
//
// Consumer offset commits (UPDATE_CONSUMER_OFFSET) are answered inline
// too, for their order rather than their speed: applied before the next
// request on the connection is even read, a commit is seen by the query
// (QUERY_CONSUMER_OFFSET) or commit the client sends behind it. Handed to
// workers, two frames read in one go are served in reverse order more
// often than not (the Go scheduler runs the goroutine woken last first),
// and rocketmq-client-go then loses a reset (220): it commits the reset
// offset and at once queries it to pull again, gets its old offset back,
// and never re-delivers that queue (TestOffsetCommitOrderedOnConnection).
// RocketMQ 4.x serves both codes from one FIFO executor. A commit is a
// map update under a mutex, so it cannot hold the reader; with a rate
// limiter, whose token wait could, commits go to workers like the rest.
func (s *Server) inlineRequest(req *remoting.RemotingCommand) bool {
	if req.Code == remoting.CodeUpdateConsumerOffset {
		return s.inlineCommits
	}
	return s.inlineSends && isSendCode(req.Code)
}

// canInlineSends reports whether sends qualify for inlineRequest, fixed
// when the server is made.
func (s *Server) canInlineSends() bool {
	if s.b == nil || s.b.PutsWait() {
		return false
	}
	return s.sec == nil || s.sec.limiter == nil
}

// canInlineCommits reports whether consumer offset commits qualify for
// inlineRequest, fixed when the server is made: not under a rate limiter.
func (s *Server) canInlineCommits() bool {
	return s.b != nil && (s.sec == nil || s.sec.limiter == nil)
}
