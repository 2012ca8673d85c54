package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// consumer pulls queue 0 of a bench store with GetMessage, 32 messages at
// a time (RocketMQ's default transfer count), and sleeps on the store's
// arrival listener when it has caught up, as a held long-poll pull would.
type consumer struct {
	bs     *benchStore
	offset int64
	hist   *Histogram // nil: no latency recording
	buf    []byte     // nil: records are not copied out
}

// consume reads n messages.
func (c *consumer) consume(ctx context.Context, n int64) error {
	for got := int64(0); got < n; {
		r, err := c.bs.GetMessage(Topic, 0, c.offset, 32, nil)
		if err != nil {
			return err
		}
		if r.Status != engine.Found {
			st := r.Status
			r.Release()
			if st != engine.OffsetOverflowOne && st != engine.NoMessageInQueue && st != engine.NoMatchedLogicQueue {
				return fmt.Errorf("bench: getMessage at %d: %v", c.offset, st)
			}
			select {
			case <-c.bs.arrived:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		for _, m := range r.Messages {
			if c.hist != nil {
				info, err := record.Check(m.Record, -1, false)
				if err != nil {
					r.Release()
					return err
				}
				c.hist.Record(Since(info.Body))
			}
			if c.buf != nil {
				// Copy the record out, as writing it to a socket would.
				copy(c.buf, m.Record)
			}
		}
		got += int64(len(r.Messages))
		c.offset = r.NextBeginOffset
		r.Release()
	}
	return nil
}

// e2e runs one producer and one consumer on queue 0: first unthrottled
// (msgs messages; msgs/s is the time until the consumer has the last one),
// then paced at rate msgs/s for dur, recording the put-to-consume latency
// of every message from the timestamp the producer wrote into its body.
func (e env) e2e(ctx context.Context, backendName string, body, msgs, rate int, dur time.Duration) (Result, error) {
	bs, err := e.openStore(backendName, e.storeConfig(engine.AsyncFlush))
	if err != nil {
		return Result{}, err
	}
	defer bs.remove()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := &consumer{bs: bs}
	produce := func(n int, pace *Pacer) error {
		m := newMessage(0, max(body, 8))
		for i := 0; i < n; i++ {
			if pace != nil {
				pace.Wait()
			}
			Stamp(m.Body)
			if _, err := bs.Put(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	run := func(n int, pace *Pacer) (time.Duration, error) {
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- produce(n, pace) }()
		cerr := c.consume(ctx, int64(n))
		if cerr != nil {
			cancel()
		}
		return time.Since(start), errors.Join(cerr, <-errc)
	}
	// Warm up: create the files and queue, untimed.
	if _, err := run(1000, nil); err != nil {
		return Result{}, err
	}
	elapsed, err := run(msgs, nil)
	if err != nil {
		return Result{}, err
	}
	c.hist = NewHistogram()
	paced := int(float64(rate) * dur.Seconds())
	if _, err := run(paced, NewPacer(rate)); err != nil {
		return Result{}, err
	}
	r := Result{Group: GroupE2E, Backend: backendName, Body: body, Producers: 1, Msgs: int64(msgs),
		BodyBytes: int64(msgs) * int64(body), Seconds: elapsed.Seconds(), Latency: c.hist.Latency(),
		Note: fmt.Sprintf("latency at %s msgs/s", num(float64(rate)))}
	r.finish()
	return r, nil
}

// lag measures the dispatch lag: from Put returning to the message being
// visible in its ConsumeQueue (Store.WaitDispatched), one message at a
// time.
func (e env) lag(ctx context.Context, backendName string, body, samples int) (Result, error) {
	bs, err := e.openStore(backendName, e.storeConfig(engine.AsyncFlush))
	if err != nil {
		return Result{}, err
	}
	defer bs.remove()
	h := NewHistogram()
	m := newMessage(0, body)
	start := time.Now()
	for i := 0; i < samples+100; i++ {
		res, err := bs.Put(ctx, m)
		if err != nil {
			return Result{}, err
		}
		t0 := time.Now()
		if err := bs.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes)); err != nil {
			return Result{}, err
		}
		if i >= 100 { // the first ones create files
			h.Record(time.Since(t0))
		}
	}
	r := Result{Group: GroupLag, Backend: backendName, Body: body, Msgs: int64(samples),
		Seconds: time.Since(start).Seconds(), Latency: h.Latency(),
		Note: "put returned → ConsumeQueue-visible, one at a time"}
	r.finish()
	r.MsgsPerS, r.MBPerS = 0, 0 // not a throughput figure
	return r, nil
}
