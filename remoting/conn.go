package remoting

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is one remoting connection, accepted by a Server or opened by Dial.
// It reads frames in one goroutine, writes them from a bounded queue in
// another, and runs request handlers on worker goroutines: up to
// coreWorkers live as long as the connection (a goroutine per request paid
// for its stack growing on every request), and bursts beyond them get
// extra workers, up to Options.MaxConcurrentRequests, that exit after a
// while without requests. Requests Options.Inline picks are answered on
// the read goroutine instead, and those Options.Ordered picks one at a
// time, in the order read, on a goroutine of their own. The socket is
// read and written with raw non-blocking system calls where it can be
// (rawio.go). All methods are safe for concurrent use.
type Conn struct {
	id      uint64
	nc      net.Conn
	remote  string  // nc.RemoteAddr().String(), formatted once
	opts    Options // with defaults
	handler Handler
	log     *slog.Logger
	stats   *counters
	ctx     context.Context // canceled by close; handlers get it
	cancel  context.CancelFunc

	// Write side. Invariant: once wclosed is set under wmu nothing more
	// enters out, so the writer can drain it without blocking.
	out        chan *frameBuf
	outBytes   atomic.Int64
	wmu        sync.Mutex
	wclosed    bool
	finish     chan struct{} // closed: writer drains out, flushes, closes
	finishOnce sync.Once
	writerDone chan struct{}

	closeOnce sync.Once
	closed    chan struct{} // closed by close, after closeErr is set
	closeErr  error

	draining atomic.Bool                 // graceful shutdown: read no more requests
	inline   func(*RemotingCommand) bool // Options.Inline
	ordered  func(*RemotingCommand) bool // Options.Ordered
	serial   chan job                    // Options.Ordered's queue; nil until its first request, closed after readLoop
	budget   *byteBudget                 // the server's bytes for incoming frames; nil: no cap
	work     chan job                    // requests handed to idle workers; closed after readLoop
	workers  atomic.Int32                // running
	wg       sync.WaitGroup
	handlers sync.WaitGroup // requests dispatched and not yet answered
	inflight atomic.Int32   // the same count, readable: the writer waits for answers on their way

	pmu     sync.Mutex
	pending map[int32]chan *RemotingCommand // Invoke waiters by opaque

	untrack func() // set by the owner before run; called before OnClose

	// known: the peer sent a valid request; only then may its large
	// frames use the known clients' share of the budget. Read loop only.
	known bool
	// shareHeld is what this connection's classShare frames hold of the
	// receive budget (at most connShare).
	shareHeld atomic.Int64
	// frameStart is when the frame being read began to wait on the socket
	// (Options.Clock, Unix ns), 0 between frames and while the frame is
	// whole in the read buffer; the server's reaper closes the connection
	// once it is older than Options.FrameTimeout.
	frameStart atomic.Int64
}

// job is one request for a worker, with the receive budget its frame holds.
type job struct {
	req     *RemotingCommand
	charged charge
}

func newConn(ctx context.Context, id uint64, nc net.Conn, h Handler, opts Options, st *counters, budget *byteBudget) *Conn {
	ctx, cancel := context.WithCancel(ctx)
	remote := nc.RemoteAddr().String()
	return &Conn{
		id: id, nc: nc, remote: remote, opts: opts, handler: h, stats: st, ctx: ctx, cancel: cancel,
		log:        opts.Logger.With("conn", id, "remote", remote),
		out:        make(chan *frameBuf, opts.WriteQueueLen),
		finish:     make(chan struct{}),
		writerDone: make(chan struct{}),
		inline:     opts.Inline,
		ordered:    opts.Ordered,
		closed:     make(chan struct{}),
		budget:     budget,
		work:       make(chan job),
		pending:    map[int32]chan *RemotingCommand{},
	}
}

// ID returns a number unique among the connections of one Server or Client.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// RemoteAddrString returns RemoteAddr().String(), formatted once when the
// connection was made (handlers name the peer on every pull).
func (c *Conn) RemoteAddrString() string { return c.remote }

// LocalAddr returns this end's address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Context returns a context canceled when the connection closes.
func (c *Conn) Context() context.Context { return c.ctx }

// Done returns a channel closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err returns why the connection closed (nil for a clean close), or nil
// while it is open.
func (c *Conn) Err() error {
	select {
	case <-c.closed:
		return c.closeErr
	default:
		return nil
	}
}

// Close closes the connection at once; queued frames are dropped.
func (c *Conn) Close() error {
	c.close(nil)
	return nil
}

// run serves the connection until it closes, then waits for its
// goroutines and calls OnClose.
func (c *Conn) run() {
	c.log.Debug("remoting: connection open")
	go c.writeLoop()
	if c.opts.OnConnect != nil {
		c.opts.OnConnect(c)
	}
	err := c.readLoop()
	close(c.work) // only readLoop sends: idle workers exit
	if c.serial != nil {
		close(c.serial) // likewise; the ordered goroutine serves what is queued, then exits
	}
	if c.draining.Load() {
		// Graceful: no more requests are read; let the running ones
		// answer and their responses flush before the socket closes.
		c.handlers.Wait()
		c.finishWrites()
	} else {
		c.close(err)
	}
	c.handlers.Wait()
	c.wg.Wait()
	<-c.writerDone
	if c.untrack != nil {
		c.untrack() // so that OnClose already sees the server without c
	}
	if c.opts.OnClose != nil {
		c.opts.OnClose(c, c.closeErr)
	}
}

// close closes the connection with reason err, once.
func (c *Conn) close(err error) {
	c.closeOnce.Do(func() {
		c.closeErr = err
		c.wmu.Lock()
		c.wclosed = true
		c.wmu.Unlock()
		close(c.closed)
		c.cancel()
		_ = c.nc.Close()
		c.count(err)
		c.logClose(err)
	})
}

func (c *Conn) count(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrFrameTooLarge):
		c.stats.framesTooLarge.Add(1)
	case errors.Is(err, ErrBadFrame), errors.Is(err, ErrBadHeader):
		c.stats.badFrames.Add(1)
	case errors.Is(err, ErrIdleTimeout):
		c.stats.idleTimeouts.Add(1)
	case errors.Is(err, ErrFrameTimeout):
		c.stats.frameTimeouts.Add(1)
	case errors.Is(err, ErrWriteQueueFull):
		c.stats.writeQueueOverflows.Add(1)
	case errors.Is(err, ErrReceiveBudget):
		c.stats.receiveBudgetCloses.Add(1)
	}
}

func (c *Conn) logClose(err error) {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, ErrServerClosed):
		c.log.Debug("remoting: connection closed", "reason", err)
	case errors.Is(err, ErrReceiveBudget), errors.Is(err, ErrFrameTimeout):
		c.log.Warn("remoting: connection closed", "reason", err)
	default:
		c.log.Info("remoting: connection closed", "reason", err)
	}
}

// drain starts a graceful close: the read loop stops at the next frame
// boundary (or at once if it is waiting for one).
func (c *Conn) drain() {
	c.draining.Store(true)
	// Invariant with readLoop: the flag is set before the deadline, and
	// readLoop checks the flag after setting its own deadline, so either it
	// sees the flag or this past deadline interrupts its read.
	_ = c.nc.SetReadDeadline(time.Now())
}

// finishWrites lets the writer drain the queue, flush and close the socket.
func (c *Conn) finishWrites() {
	c.finishOnce.Do(func() {
		c.wmu.Lock()
		c.wclosed = true
		c.wmu.Unlock()
		close(c.finish)
	})
}

// frameBuffered reports whether br holds the whole next frame, so that
// reading it does not touch the socket.
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < frameLenSize {
		return false
	}
	b, err := br.Peek(frameLenSize)
	if err != nil {
		return false
	}
	return int64(n) >= frameLenSize+int64(binary.BigEndian.Uint32(b))
}

// readLoop reads frames until an error, dispatching requests and
// delivering responses.
func (c *Conn) readLoop() error {
	var rd io.Reader = c.nc
	if r := newRawReader(c.nc); r != nil {
		rd = r // rawio.go: reads the runtime does not see as syscalls
	}
	br := bufio.NewReaderSize(rd, readBufferSize)
	for {
		if c.draining.Load() {
			return nil
		}
		// The idle deadline guards reads from the socket: a frame already
		// whole in the buffer needs none, and resetting the deadline (a
		// clock read and a timer update) per pipelined frame cost more
		// than decoding it.
		if !frameBuffered(br) {
			if err := c.nc.SetReadDeadline(time.Now().Add(c.opts.IdleTimeout)); err != nil {
				return err
			}
		}
		if c.draining.Load() {
			return nil
		}
		cmd, charged, err := c.readCommand(br)
		c.frameStart.Store(0)
		if err != nil {
			return err
		}
		if !c.known && !cmd.IsResponse() {
			c.known = true
		}
		if cmd.IsResponse() {
			// The waiter owns the response from here on; only the
			// server side (handlers) is held to the budget.
			c.budget.release(charged)
			c.deliver(cmd)
			continue
		}
		if c.inline != nil && c.inline(cmd) {
			c.serveInline(job{cmd, charged})
			continue
		}
		if c.ordered != nil && c.ordered(cmd) {
			if err := c.dispatchOrdered(job{cmd, charged}); err != nil {
				return err
			}
			continue
		}
		if err := c.dispatch(job{cmd, charged}); err != nil {
			return err
		}
	}
}

// readCommand reads one frame and returns it decoded with the receive
// budget its payload holds.
func (c *Conn) readCommand(br *bufio.Reader) (*RemotingCommand, charge, error) {
	start := func(n int) frameClass {
		read := br.Buffered() >= n
		if !read && c.budget != nil {
			// The rest must come from the socket: from now on the frame
			// holds budget while it waits, which FrameTimeout bounds.
			c.frameStart.Store(c.opts.Clock.Now().UnixNano())
			if c.opts.onFrameStart != nil {
				c.opts.onFrameStart()
			}
		}
		return c.budget.classOf(n, c.known, read && c.shareHeld.Load()+int64(n) <= connShare)
	}
	payload, charged, err := readPayloadBudget(c.ctx, br, c.opts.MaxFrameSize, c.budget, start)
	if err == nil && charged.class == classShare {
		c.shareHeld.Add(charged.n)
		charged.share = &c.shareHeld
	}
	if err != nil {
		if cerr := c.Err(); cerr != nil && errors.Is(cerr, ErrFrameTimeout) {
			return nil, charge{}, cerr // the reaper closed the socket under the read
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !c.draining.Load() {
			return nil, charge{}, fmt.Errorf("%w: nothing or only part of a frame received for %v", ErrIdleTimeout, c.opts.IdleTimeout)
		}
		return nil, charge{}, err
	}
	c.stats.bytesIn.Add(int64(frameLenSize + len(payload)))
	cmd, err := decodePayloadOwned(payload)
	if err != nil {
		c.budget.release(charged)
		return nil, charge{}, err
	}
	return cmd, charged, nil
}

// frameOverdue reports whether the frame being read started waiting on
// the socket more than timeout before now.
func (c *Conn) frameOverdue(now time.Time, timeout time.Duration) bool {
	start := c.frameStart.Load()
	return start != 0 && now.UnixNano()-start > int64(timeout)
}

// dispatch hands j to an idle worker, starts a new one while fewer than
// MaxConcurrentRequests run, and otherwise waits for one to be free (the
// connection is not read meanwhile).
func (c *Conn) dispatch(j job) error {
	c.stats.requests.Add(1)
	c.handlers.Add(1)
	c.inflight.Add(1)
	select {
	case c.work <- j:
		return nil
	default:
	}
	if n := c.workers.Load(); int(n) < c.opts.MaxConcurrentRequests {
		c.workers.Add(1)
		c.wg.Add(1)
		go c.worker(j, n < coreWorkers)
		return nil
	}
	return c.handOff(c.work, j)
}

// orderedQueueLen bounds the requests waiting for a connection's ordered
// goroutine (Options.Ordered); when full, the read loop waits, as it does
// for a worker at MaxConcurrentRequests. A client keeps few of these in
// flight (a commit and a query per queue it holds).
const orderedQueueLen = 64

// dispatchOrdered queues j for the connection's ordered goroutine,
// starting it at the first ordered request; only readLoop calls it.
func (c *Conn) dispatchOrdered(j job) error {
	c.stats.requests.Add(1)
	c.handlers.Add(1)
	c.inflight.Add(1)
	if c.serial == nil {
		c.serial = make(chan job, orderedQueueLen)
		c.wg.Add(1)
		go c.serveOrdered(c.serial)
	}
	return c.handOff(c.serial, j)
}

// handOff queues j on q for a goroutine that serves it, or, if the
// connection closes first, drops it and returns the close's cause.
func (c *Conn) handOff(q chan<- job, j job) error {
	select {
	case q <- j:
		return nil
	case <-c.closed:
		c.finished(j)
		return c.closeErr
	}
}

// serveOrdered serves the ordered requests one at a time, in the order
// read, until the read loop closes q.
func (c *Conn) serveOrdered(q <-chan job) {
	defer c.wg.Done()
	for j := range q {
		c.serveRequest(j)
	}
}

// serveInline answers j on the read goroutine (Options.Inline), without
// handing it to a worker; the connection reads nothing meanwhile.
func (c *Conn) serveInline(j job) {
	c.stats.requests.Add(1)
	c.stats.inlineRequests.Add(1)
	c.handlers.Add(1)
	c.inflight.Add(1)
	c.serveRequest(j)
}

// coreWorkers is the number of a connection's workers that stay when
// idle, so that an idle connection holds few goroutines; the others exit
// after extraWorkerIdle without a request.
const (
	coreWorkers     = 4
	extraWorkerIdle = 2 * time.Second
)

// worker serves first, then whatever the read loop hands it: a core worker
// until the read loop ends, an extra one while requests are waiting.
func (c *Conn) worker(first job, core bool) {
	defer func() {
		c.workers.Add(-1)
		if c.opts.onWorkerExit != nil {
			c.opts.onWorkerExit()
		}
		c.wg.Done()
	}()
	c.serveRequest(first)
	if core {
		for j := range c.work {
			c.serveRequest(j)
		}
		return
	}
	idle := c.opts.Clock.NewTimer(extraWorkerIdle)
	defer idle.Stop()
	for {
		select {
		case j, ok := <-c.work:
			if !ok {
				return
			}
			c.serveRequest(j)
			idle.Reset(extraWorkerIdle)
		case <-idle.Chan():
			return
		}
	}
}

// finished ends the accounting of a request read from the connection:
// served, or dropped because the connection closed first.
func (c *Conn) finished(j job) {
	c.budget.release(j.charged)
	c.inflight.Add(-1)
	c.handlers.Done()
}

func (c *Conn) serveRequest(j job) {
	req := j.req
	defer c.finished(j)
	resp, err := c.callHandler(req)
	if err != nil {
		c.stats.handlerErrors.Add(1)
		c.log.Warn("remoting: handler failed", "code", req.Code, "opaque", req.Opaque, "err", err)
		resp = req.NewResponse(CodeSystemError, err.Error())
	}
	if resp == nil {
		return
	}
	if req.IsOneway() {
		resp.release()
		return
	}
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	if err := c.WriteResponse(resp); err != nil && !errors.Is(err, ErrConnClosed) {
		c.log.Warn("remoting: cannot write response", "code", req.Code, "opaque", req.Opaque, "err", err)
	}
}

// callHandler calls the handler, turning a panic into an error so that one
// bad request cannot take the server down.
func (c *Conn) callHandler(req *RemotingCommand) (resp *RemotingCommand, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("remoting: handler panicked", "code", req.Code, "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("remoting: handler for code %d panicked: %v", req.Code, p)
		}
	}()
	return c.handler.Handle(c.ctx, c, req)
}
