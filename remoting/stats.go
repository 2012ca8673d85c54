package remoting

import "sync/atomic"

// Stats is a snapshot of a Server's counters, all monotonic except
// ConnsOpen.
type Stats struct {
	ConnsAccepted       int64 // connections accepted
	ConnsRejected       int64 // connections closed at once because of MaxConns
	ConnsOpen           int64 // connections currently open
	Requests            int64 // requests read and dispatched
	Responses           int64 // responses read (answers to server-initiated requests)
	ResponsesSent       int64 // responses queued for writing
	UnmatchedResponses  int64 // responses read whose opaque nobody waits for
	HandlerErrors       int64 // handlers that returned an error or panicked
	BadFrames           int64 // connections closed for a malformed frame or header
	FramesTooLarge      int64 // connections closed for an oversize frame
	IdleTimeouts        int64 // connections closed for IdleTimeout
	FrameTimeouts       int64 // connections closed for FrameTimeout (a peer stalled inside a frame)
	WriteQueueOverflows int64 // connections closed because their peer did not read
	ReceiveBudgetCloses int64 // connections closed waiting for MaxReceiveBytes budget
	ReceiveBytesInUse   int64 // bytes of incoming frames held now (not monotonic)
	BytesIn             int64 // frame bytes read
	BytesOut            int64 // frame bytes written
	FramesOut           int64 // frames written
	Writes              int64 // socket writes (one writev carries FramesOut/Writes frames)
	InlineRequests      int64 // requests answered on the read goroutine (Options.Inline), of Requests
}

// counters is the live form of Stats, shared by a server's connections.
type counters struct {
	connsAccepted, connsRejected, connsOpen                atomic.Int64
	requests, responses, responsesSent, unmatched          atomic.Int64
	handlerErrors, badFrames, framesTooLarge               atomic.Int64
	idleTimeouts, writeQueueOverflows, bytesIn, bytesOut   atomic.Int64
	receiveBudgetCloses, framesOut, writes, inlineRequests atomic.Int64
	frameTimeouts                                          atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		ConnsAccepted: c.connsAccepted.Load(), ConnsRejected: c.connsRejected.Load(),
		ConnsOpen: c.connsOpen.Load(), Requests: c.requests.Load(),
		Responses: c.responses.Load(), ResponsesSent: c.responsesSent.Load(),
		UnmatchedResponses: c.unmatched.Load(), HandlerErrors: c.handlerErrors.Load(),
		BadFrames: c.badFrames.Load(), FramesTooLarge: c.framesTooLarge.Load(),
		IdleTimeouts: c.idleTimeouts.Load(), WriteQueueOverflows: c.writeQueueOverflows.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(),
		ReceiveBudgetCloses: c.receiveBudgetCloses.Load(), FramesOut: c.framesOut.Load(), Writes: c.writes.Load(),
		InlineRequests: c.inlineRequests.Load(), FrameTimeouts: c.frameTimeouts.Load(),
	}
}
