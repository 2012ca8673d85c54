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
func (s *Server) inlineRequest(req *remoting.RemotingCommand) bool {
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
