package remoting

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
)

// WriteResponse queues resp, which must have FlagResponse set and the
// request's opaque (RemotingCommand.NewResponse does both). It never
// blocks: if the write queue is full the connection is closed and
// ErrWriteQueueFull returned. After close it returns ErrConnClosed.
func (c *Conn) WriteResponse(resp *RemotingCommand) error {
	if !resp.IsResponse() {
		resp.release()
		return fmt.Errorf("%w: WriteResponse of a command without FlagResponse (code %d)", ErrEncode, resp.Code)
	}
	if err := c.send(resp); err != nil {
		return err
	}
	c.stats.responsesSent.Add(1)
	return nil
}

// Invoke sends req with a fresh opaque and waits for the response with that
// opaque, until ctx is done or the connection closes. req is not modified.
func (c *Conn) Invoke(ctx context.Context, req *RemotingCommand) (*RemotingCommand, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := *req
	r.Opaque = NextOpaque()
	r.Flag &^= FlagResponse | FlagOneway
	ch := make(chan *RemotingCommand, 1)
	c.pmu.Lock()
	c.pending[r.Opaque] = ch
	c.pmu.Unlock()
	defer func() {
		c.pmu.Lock()
		delete(c.pending, r.Opaque)
		c.pmu.Unlock()
	}()
	if err := c.send(&r); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-c.closed:
		return nil, c.closedError()
	case <-ctx.Done():
		return nil, fmt.Errorf("remoting: invoke code %d opaque %d: %w", r.Code, r.Opaque, ctx.Err())
	}
}

// InvokeOneway sends req with a fresh opaque and FlagOneway set, without
// waiting for an answer (e.g. NOTIFY_CONSUMER_IDS_CHANGED). req is not
// modified. It never blocks; ctx is checked before sending.
func (c *Conn) InvokeOneway(ctx context.Context, req *RemotingCommand) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := *req
	r.Opaque = NextOpaque()
	r.Flag = r.Flag&^FlagResponse | FlagOneway
	return c.send(&r)
}

// deliver hands a response to the Invoke waiting for its opaque. The Go
// client's one-way requests do not set FlagOneway, so peers answer requests
// nobody waits for; such responses are dropped.
func (c *Conn) deliver(resp *RemotingCommand) {
	c.stats.responses.Add(1)
	c.pmu.Lock()
	ch := c.pending[resp.Opaque]
	delete(c.pending, resp.Opaque)
	c.pmu.Unlock()
	if ch == nil {
		c.stats.unmatched.Add(1)
		c.log.Debug("remoting: response with unknown opaque dropped", "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	ch <- resp // buffered 1, and the opaque was removed: never blocks
}

func (c *Conn) closedError() error {
	if c.closeErr != nil {
		return fmt.Errorf("%w: %w", ErrConnClosed, c.closeErr)
	}
	return ErrConnClosed
}

// frameBuf holds one encoded frame on its way to the socket. frameBufs are
// pooled: send encodes into a recycled buffer and the writer recycles it
// once the frame is written, so a frame costs no allocation. A frame whose
// command had BodyParts keeps them (not copied) behind b, and its Release,
// which putFrame calls: once written, or when the frame is dropped.
type frameBuf struct {
	b        []byte
	parts    [][]byte
	partsLen int
	release  func()
}

// size is the frame's length on the wire.
func (f *frameBuf) size() int { return len(f.b) + f.partsLen }

var framePool = sync.Pool{New: func() any { return new(frameBuf) }}

// maxPooledFrame bounds the buffers kept for reuse, so that one large pull
// response does not pin its size in the pool.
const maxPooledFrame = 64 << 10

// Write batching: the writer hands the socket every frame already queued,
// up to these bounds, in one writev (or one write of a reused buffer).
const (
	maxBatchFrames = 64
	maxBatchBytes  = 256 << 10
)

func putFrame(f *frameBuf) {
	if r := f.release; r != nil {
		f.release = nil
		r()
	}
	f.parts, f.partsLen = nil, 0
	if cap(f.b) > maxPooledFrame {
		f.b = nil
	}
	f.b = f.b[:0]
	framePool.Put(f)
}

// releaseOnEncode is a broken variant for tests: Release runs as soon as
// the frame is encoded instead of once it is written, so the socket reads
// BodyParts after their owner took them back (a CommitLog file unmapped
// under a pull answer in flight). TestBodyPartsReleasedAfterWrite
// catches it.
var releaseOnEncode = false

// send encodes cmd and queues the frame; cmd's BodyParts are queued as
// they are, and its Release passes to the frame (called even on error).
func (c *Conn) send(cmd *RemotingCommand) error {
	f := framePool.Get().(*frameBuf)
	b, err := cmd.appendFrameHead(f.b[:0])
	f.b = b
	if cmd.Release != nil || len(cmd.BodyParts) > 0 {
		f.parts, f.partsLen, f.release = cmd.BodyParts, int(cmd.bodyLen())-len(cmd.Body), cmd.Release
		cmd.Release = nil
		if releaseOnEncode && f.release != nil { // broken variant (tests only)
			f.release()
			f.release = nil
		}
	}
	if err != nil {
		putFrame(f)
		return err
	}
	if err := c.enqueue(f); err != nil {
		putFrame(f)
		return err
	}
	return nil
}

// enqueue queues frame without blocking. A full queue (in frames or bytes)
// means the peer does not read: the connection is closed.
func (c *Conn) enqueue(f *frameBuf) error {
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		select {
		case <-c.closed:
			return c.closedError()
		default:
			return ErrConnClosed // draining
		}
	}
	n := int64(f.size())
	queued := c.outBytes.Add(n)
	if queued > n && queued > c.opts.WriteQueueBytes {
		c.outBytes.Add(-n)
		c.wmu.Unlock()
		return c.overflow(queued)
	}
	select {
	case c.out <- f:
		c.wmu.Unlock()
		return nil
	default:
		c.outBytes.Add(-n)
		c.wmu.Unlock()
		return c.overflow(queued)
	}
}

func (c *Conn) overflow(queued int64) error {
	err := fmt.Errorf("%w: %d frames, %d bytes queued (limits %d, %d)",
		ErrWriteQueueFull, len(c.out), queued, c.opts.WriteQueueLen, c.opts.WriteQueueBytes)
	c.close(err)
	return err
}

// frameWriter is the write goroutine's state: the batch being written and
// the buffers reused from one batch to the next.
type frameWriter struct {
	batch []*frameBuf
	// A TCP or Unix socket gets each batch as one writev of the frames
	// themselves; iov is the reused slice of frames, wv what WriteTo
	// consumes (a field, so that WriteTo's pointer does not escape).
	vectored bool
	iov      [][]byte
	wv       net.Buffers
	// raw, when set, writes the vectored batches (rawio.go).
	raw *rawWriter
	// Other connections get each batch copied into buf and written at once.
	buf []byte
}

func newFrameWriter(nc net.Conn) *frameWriter {
	w := &frameWriter{batch: make([]*frameBuf, 0, maxBatchFrames)}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		w.vectored = true
		w.iov = make([][]byte, 0, maxBatchFrames)
		w.raw = newRawWriter(nc)
	}
	return w
}

// writeLoop writes queued frames, batching whatever is queued into one
// socket write, until the connection closes or finishWrites drains it.
func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	defer c.dropQueued()
	w := newFrameWriter(c.nc)
	for {
		select {
		case f := <-c.out:
			if err := c.writeBatch(w, f); err != nil {
				c.close(err)
				return
			}
		case <-c.finish:
			c.close(c.drainQueue(w))
			return
		case <-c.closed:
			return
		}
	}
}

// writeBatch writes f and the frames queued behind it, up to
// maxBatchFrames and maxBatchBytes, in one socket write under one write
// deadline, then recycles them.
func (c *Conn) writeBatch(w *frameWriter, f *frameBuf) error {
	w.batch = append(w.batch[:0], f)
	n := c.collect(w, f.size())
	if len(w.batch) < maxBatchFrames && n < maxBatchBytes && c.inflight.Load() > 0 {
		// Handlers are running whose answers would otherwise each cost
		// a writev of their own: let them run first, once, so that one
		// write carries them all.
		runtime.Gosched()
		n = c.collect(w, n)
	}
	err := c.writeFrames(w, n)
	for i, f := range w.batch {
		putFrame(f)
		w.batch[i] = nil
	}
	w.batch = w.batch[:0]
	return err
}

// collect appends the frames already queued to w.batch, up to
// maxBatchFrames and maxBatchBytes, and returns the batch's bytes.
func (c *Conn) collect(w *frameWriter, n int) int {
	for len(w.batch) < maxBatchFrames && n < maxBatchBytes {
		select {
		case f := <-c.out:
			w.batch = append(w.batch, f)
			n += f.size()
		default:
			return n
		}
	}
	return n
}

func (c *Conn) writeFrames(w *frameWriter, n int) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	var err error
	if w.vectored {
		for _, f := range w.batch {
			w.iov = append(w.iov, f.b)
			w.iov = append(w.iov, f.parts...)
		}
		if w.raw != nil {
			err = w.raw.write(w.iov)
		} else {
			w.wv = w.iov
			_, err = w.wv.WriteTo(c.nc)
		}
		clear(w.iov)
		w.iov, w.wv = w.iov[:0], nil
	} else if len(w.batch) == 1 && w.batch[0].partsLen == 0 {
		_, err = c.nc.Write(w.batch[0].b)
	} else {
		w.buf = w.buf[:0]
		for _, f := range w.batch {
			w.buf = append(w.buf, f.b...)
			for _, p := range f.parts {
				w.buf = append(w.buf, p...)
			}
		}
		_, err = c.nc.Write(w.buf)
		if cap(w.buf) > 2*maxBatchBytes {
			w.buf = nil
		}
	}
	if err != nil {
		return fmt.Errorf("remoting: write: %w", err)
	}
	c.outBytes.Add(-int64(n))
	c.stats.bytesOut.Add(int64(n))
	c.stats.framesOut.Add(int64(len(w.batch)))
	c.stats.writes.Add(1)
	return nil
}

// drainQueue writes what is left after finishWrites; wclosed is set, so the
// queue only shrinks.
func (c *Conn) drainQueue(w *frameWriter) error {
	for {
		select {
		case f := <-c.out:
			if err := c.writeBatch(w, f); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// dropQueued recycles the frames left in the queue when the writer stops,
// so that their Release runs. The writer stops only after close, which
// sets wclosed under wmu before closing c.closed: no frame enters the
// queue after that, so one pass empties it for good.
func (c *Conn) dropQueued() {
	for {
		select {
		case f := <-c.out:
			c.outBytes.Add(-int64(f.size()))
			putFrame(f)
		default:
			return
		}
	}
}
