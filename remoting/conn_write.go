package remoting

import (
	"bufio"
	"context"
	"fmt"
	"time"
)

// WriteResponse queues resp, which must have FlagResponse set and the
// request's opaque (RemotingCommand.NewResponse does both). It never
// blocks: if the write queue is full the connection is closed and
// ErrWriteQueueFull returned. After close it returns ErrConnClosed.
func (c *Conn) WriteResponse(resp *RemotingCommand) error {
	if !resp.IsResponse() {
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

// send encodes cmd and queues the frame.
func (c *Conn) send(cmd *RemotingCommand) error {
	frame, err := cmd.MarshalFrame()
	if err != nil {
		return err
	}
	return c.enqueue(frame)
}

// enqueue queues frame without blocking. A full queue (in frames or bytes)
// means the peer does not read: the connection is closed.
func (c *Conn) enqueue(frame []byte) error {
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
	n := int64(len(frame))
	queued := c.outBytes.Add(n)
	if queued > n && queued > c.opts.WriteQueueBytes {
		c.outBytes.Add(-n)
		c.wmu.Unlock()
		return c.overflow(queued)
	}
	select {
	case c.out <- frame:
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

// writeLoop writes queued frames, batching whatever is queued into one
// flush, until the connection closes or finishWrites drains it.
func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	for {
		select {
		case f := <-c.out:
			if err := c.writeBatch(bw, f); err != nil {
				c.close(err)
				return
			}
		case <-c.finish:
			c.close(c.drainQueue(bw))
			return
		case <-c.closed:
			return
		}
	}
}

// writeBatch writes f and every frame already queued behind it, then
// flushes, all under one write deadline per frame.
func (c *Conn) writeBatch(bw *bufio.Writer, f []byte) error {
	for {
		if err := c.writeFrame(bw, f); err != nil {
			return err
		}
		select {
		case f = <-c.out:
		default:
			return bw.Flush()
		}
	}
}

func (c *Conn) writeFrame(bw *bufio.Writer, f []byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	if _, err := bw.Write(f); err != nil {
		return fmt.Errorf("remoting: write: %w", err)
	}
	c.outBytes.Add(-int64(len(f)))
	c.stats.bytesOut.Add(int64(len(f)))
	return nil
}

// drainQueue writes what is left after finishWrites; wclosed is set, so the
// queue only shrinks.
func (c *Conn) drainQueue(bw *bufio.Writer) error {
	for {
		select {
		case f := <-c.out:
			if err := c.writeFrame(bw, f); err != nil {
				return err
			}
		default:
			return bw.Flush()
		}
	}
}
