package remoting

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/internal/defaults"
)

// Options configures a Server or a Client connection. The zero value means
// RocketMQ's defaults where RocketMQ has one, and this package's otherwise.
type Options struct {
	// MaxFrameSize bounds a received frame, length field included.
	// 0 means DefaultMaxFrameSize (16 MiB, RocketMQ's frameMaxLength).
	MaxFrameSize int
	// IdleTimeout drops a connection that sends nothing for this long. It
	// is counted from the end of one frame to the end of the next, so it
	// also drops a peer that stalls inside a frame. 0 means 120 s, the
	// channel idle time of RocketMQ's broker.
	IdleTimeout time.Duration
	// WriteTimeout drops a connection when one socket write blocks this
	// long. 0 means 30 s.
	WriteTimeout time.Duration
	// WriteQueueLen bounds the frames waiting to be written on one
	// connection; a peer that lets it fill up is disconnected. 0 means 1024.
	WriteQueueLen int
	// WriteQueueBytes bounds the bytes waiting to be written on one
	// connection, as WriteQueueLen bounds frames; a single frame larger
	// than the bound is still sent when the queue is empty. 0 means 64 MiB.
	WriteQueueBytes int64
	// MaxConcurrentRequests bounds the handler goroutines of one
	// connection; when reached, the connection is not read until one
	// finishes. 0 means 64.
	MaxConcurrentRequests int
	// MaxConns bounds the server's open connections; further accepted
	// connections are closed at once. 0 means no limit (as RocketMQ).
	MaxConns int
	// MaxReceiveBytes caps the bytes a server holds in incoming frames
	// across all its connections: frames being received and requests whose
	// handler has not returned. A connection that needs more waits for
	// other frames to release theirs, at most ReceiveBudgetWait, and is then
	// closed. It must be at least twice MaxFrameSize (a frame's buffer
	// doubles as it arrives). 0 means DefaultMaxReceiveBytes (128 MiB);
	// client connections have no cap.
	MaxReceiveBytes int64
	// ReceiveBudgetWait bounds the wait for receive budget. 0 means 5 s.
	ReceiveBudgetWait time.Duration
	// LargeFrameSize splits frames into small and large: frames whose
	// payload exceeds it are large. Large frames together hold at most
	// MaxReceiveBytes less SmallFrameReserve, so that small frames (nearly
	// every request: RocketMQ clients compress bodies over 4 KiB) never
	// wait behind peers that announce large frames and stall. 0 means
	// DefaultLargeFrameSize (1 MiB).
	LargeFrameSize int
	// SmallFrameReserve is the part of MaxReceiveBytes only small frames
	// may hold. 0 means a quarter of MaxReceiveBytes, but no more than
	// leaves twice MaxFrameSize for large frames.
	SmallFrameReserve int64
	// StrangerReceiveBytes caps the bytes frames still arriving hold on
	// connections that have not yet sent a valid request, whatever their
	// size, so that unknown peers cannot keep known clients' frames out. (A
	// frame that arrived whole with the bytes its connection already read
	// never waits: see the read buffer's share in budget.go.) At least
	// twice MaxFrameSize; 0 means that.
	StrangerReceiveBytes int64
	// FrameTimeout closes a server connection whose peer stalls inside a
	// frame: once a frame's length has arrived, the rest must follow within
	// it (the frame's receive budget is held meanwhile). 0 means
	// DefaultFrameTimeout (30 s); IdleTimeout still bounds the wait for a
	// frame's first bytes.
	FrameTimeout time.Duration
	// Clock is the server's clock for FrameTimeout (the connection reaper
	// runs on its ticker) and for the idle time after which a connection's
	// extra workers exit. nil means the real clock.
	Clock clockwork.Clock
	// onFrameStart, if set, is called when a server connection starts
	// waiting for the rest of a frame (tests).
	onFrameStart func()
	// onWorkerExit, if set, is called when a connection's worker has
	// exited and left the count (tests).
	onWorkerExit func()
	// Inline, if set, picks the requests a connection answers on its read
	// goroutine instead of handing them to a worker, which saves the
	// handoff and its scheduling per request. Only for requests whose
	// handler never blocks: no waiting on a disk sync, a replica, a timer,
	// a long-held lock or a response on the same connection (Invoke from
	// an inline handler would deadlock), since the connection reads nothing
	// until the handler returns. The broker marks async-flush sends (as
	// RocketMQ 4.x runs all sends on one thread, sendMessageThreadPoolNums
	// = 1). nil: every request goes to a worker.
	Inline func(req *RemotingCommand) bool
	// Ordered, if set, picks the requests a connection serves one at a
	// time in the order it read them, on a goroutine of its own (started
	// at the first such request): neither the read goroutine, which goes
	// on reading while an ordered request waits (for a rate limiter's
	// token, say), nor the workers, where a request read later can be
	// served first. For requests whose effect the next request on the
	// connection must see: the broker marks the consumer-manage codes
	// (offset commits and queries, RocketMQ 4.x's consumerManageExecutor).
	// Inline is asked first. nil: no request is ordered.
	Ordered func(req *RemotingCommand) bool
	// Logger receives connection events. nil means slog.Default().
	Logger *slog.Logger
	// OnConnect, if set, runs in the connection's goroutine before its
	// first read.
	OnConnect func(*Conn)
	// OnClose, if set, runs once per connection after it is closed and all
	// its handler goroutines have returned, with the reason (nil for a
	// clean close, io.EOF when the peer hung up). The broker uses it to
	// expire the connection's clients.
	OnClose func(c *Conn, reason error)
}

// Defaults for the zero fields of Options.
const (
	DefaultIdleTimeout           = 120 * time.Second
	DefaultWriteTimeout          = 30 * time.Second
	DefaultWriteQueueLen         = 1024
	DefaultWriteQueueBytes       = 64 << 20
	DefaultMaxConcurrentRequests = 64
	DefaultMaxReceiveBytes       = 128 << 20
	DefaultReceiveBudgetWait     = 5 * time.Second
	DefaultLargeFrameSize        = 1 << 20
	DefaultFrameTimeout          = 30 * time.Second
)

// Validate reports negative values.
func (o Options) Validate() error {
	switch {
	case o.MaxFrameSize < 0:
		return fmt.Errorf("%w: MaxFrameSize %d < 0", ErrBadOptions, o.MaxFrameSize)
	case o.MaxFrameSize > 0 && o.MaxFrameSize < frameLenSize+headerWordSize:
		return fmt.Errorf("%w: MaxFrameSize %d cannot hold a frame", ErrBadOptions, o.MaxFrameSize)
	case o.IdleTimeout < 0:
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrBadOptions, o.IdleTimeout)
	case o.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v < 0", ErrBadOptions, o.WriteTimeout)
	case o.WriteQueueLen < 0:
		return fmt.Errorf("%w: WriteQueueLen %d < 0", ErrBadOptions, o.WriteQueueLen)
	case o.WriteQueueBytes < 0:
		return fmt.Errorf("%w: WriteQueueBytes %d < 0", ErrBadOptions, o.WriteQueueBytes)
	case o.MaxConcurrentRequests < 0:
		return fmt.Errorf("%w: MaxConcurrentRequests %d < 0", ErrBadOptions, o.MaxConcurrentRequests)
	case o.MaxConns < 0:
		return fmt.Errorf("%w: MaxConns %d < 0", ErrBadOptions, o.MaxConns)
	case o.MaxReceiveBytes < 0:
		return fmt.Errorf("%w: MaxReceiveBytes %d < 0", ErrBadOptions, o.MaxReceiveBytes)
	case o.ReceiveBudgetWait < 0:
		return fmt.Errorf("%w: ReceiveBudgetWait %v < 0", ErrBadOptions, o.ReceiveBudgetWait)
	case o.LargeFrameSize < 0:
		return fmt.Errorf("%w: LargeFrameSize %d < 0", ErrBadOptions, o.LargeFrameSize)
	case o.SmallFrameReserve < 0:
		return fmt.Errorf("%w: SmallFrameReserve %d < 0", ErrBadOptions, o.SmallFrameReserve)
	case o.StrangerReceiveBytes < 0:
		return fmt.Errorf("%w: StrangerReceiveBytes %d < 0", ErrBadOptions, o.StrangerReceiveBytes)
	case o.FrameTimeout < 0:
		return fmt.Errorf("%w: FrameTimeout %v < 0", ErrBadOptions, o.FrameTimeout)
	}
	d := o.withDefaults()
	twoFrames := 2 * int64(d.MaxFrameSize)
	switch {
	case d.MaxReceiveBytes < twoFrames:
		return fmt.Errorf("%w: MaxReceiveBytes %d is less than twice MaxFrameSize %d", ErrBadOptions, d.MaxReceiveBytes, d.MaxFrameSize)
	case d.MaxReceiveBytes-d.SmallFrameReserve < twoFrames:
		return fmt.Errorf("%w: MaxReceiveBytes %d less SmallFrameReserve %d is less than twice MaxFrameSize %d",
			ErrBadOptions, d.MaxReceiveBytes, d.SmallFrameReserve, d.MaxFrameSize)
	case d.StrangerReceiveBytes < twoFrames:
		return fmt.Errorf("%w: StrangerReceiveBytes %d is less than twice MaxFrameSize %d", ErrBadOptions, d.StrangerReceiveBytes, d.MaxFrameSize)
	}
	return nil
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	defaults.Set(&o.MaxFrameSize, DefaultMaxFrameSize)
	defaults.Set(&o.IdleTimeout, DefaultIdleTimeout)
	defaults.Set(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Set(&o.WriteQueueLen, DefaultWriteQueueLen)
	defaults.Set(&o.WriteQueueBytes, DefaultWriteQueueBytes)
	defaults.Set(&o.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	defaults.Set(&o.MaxReceiveBytes, DefaultMaxReceiveBytes)
	defaults.Set(&o.ReceiveBudgetWait, DefaultReceiveBudgetWait)
	defaults.Set(&o.LargeFrameSize, DefaultLargeFrameSize)
	defaults.Set(&o.SmallFrameReserve, max(0, min(o.MaxReceiveBytes/4, o.MaxReceiveBytes-2*int64(o.MaxFrameSize))))
	defaults.Set(&o.StrangerReceiveBytes, 2*int64(o.MaxFrameSize))
	defaults.Set(&o.FrameTimeout, DefaultFrameTimeout)
	defaults.Set(&o.Clock, clockwork.NewRealClock())
	defaults.Set(&o.Logger, slog.Default())
	return o
}
