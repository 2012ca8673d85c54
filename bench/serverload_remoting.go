package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/internal/defaults"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// RemotingTarget loads a rocketstore (or any RocketMQ 4.x broker) over the
// remoting protocol: producers pipeline SEND_MESSAGE_V2 requests on raw
// connections (as the official clients' async send does, without their
// per-message cost), consumers long-poll PULL_MESSAGE.
//
// Producer i spreads its sends round-robin over its QueuesPerStream queues
// of Topic (i×Q … i×Q+Q−1, which Prepare creates), as RocketMQ producers
// rotate over a topic's queues, and consumer i keeps one pull of PullBatch
// messages (the push consumer's pullBatchSize; 32, the broker's default
// maxTransferCountOnMessageInMemory) in flight on each of them, as
// RocketMQ's push consumer does. A stream's consumer therefore drains at
// most Q × PullBatch messages per pull round trip: with too few queues for the
// producers' rate the backlog grows for the whole run and send→consume
// measures the backlog, not delivery (4 queues a stream did at 4 × 256 in
// flight; see BENCHMARKS.md). A RocketMQ application consuming a busy
// topic gives it more queues and a larger pull batch (with the broker's
// transfer limits raised to match): QueuesPerStream and PullBatch.
type RemotingTarget struct {
	Addr  string // the broker's address
	PID   int    // the server process, for ServerCPU
	Topic string
	Group string // consumer group
	// QueuesPerStream is how many queues each producer stream writes and
	// its consumer reads (DefaultQueuesPerStream when 0).
	QueuesPerStream int
	// PullBatch is each pull's maxMsgNums (the push consumer's
	// pullBatchSize; DefaultPullBatch when 0). The broker caps a result at
	// its maxTransferCountOnMessageInMemory and
	// maxTransferBytesOnMessageInMemory, so a batch above 32 needs those
	// raised to match (bench --server does).
	PullBatch int
}

// DefaultPullBatch is the push consumer's default pullBatchSize, equal to
// the broker's default maxTransferCountOnMessageInMemory.
const DefaultPullBatch = 32

// DefaultQueuesPerStream is the queues one producer stream rotates over
// and its consumer pulls from: 8, the queue count of a topic created
// with mqadmin updateTopic (and the broker's defaultTopicQueueNums).
const DefaultQueuesPerStream = 8

func (t *RemotingTarget) queues() int {
	q := t.QueuesPerStream
	defaults.Set(&q, DefaultQueuesPerStream)
	return q
}

func (t *RemotingTarget) pullBatch() int {
	b := t.PullBatch
	defaults.Set(&b, DefaultPullBatch)
	return b
}

// Prepare creates the topic with the queues of streams producer streams.
func (t *RemotingTarget) Prepare(ctx context.Context, streams int) error {
	if t.QueuesPerStream < 0 || t.PullBatch < 0 {
		return fmt.Errorf("bench: %d queues per stream, pull batch %d", t.QueuesPerStream, t.PullBatch)
	}
	queues := streams * t.queues()
	cl, err := remoting.Dial(ctx, t.Addr, remoting.ClientOptions{})
	if err != nil {
		return err
	}
	defer cl.Close()
	req := remoting.NewRequest(remoting.CodeUpdateAndCreateTopic, nil)
	req.SetExt("topic", t.Topic)
	req.SetExtInt("readQueueNums", int64(queues))
	req.SetExtInt("writeQueueNums", int64(queues))
	req.SetExtInt("perm", 6)
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		return err
	}
	if resp.Code != remoting.CodeSuccess {
		return fmt.Errorf("bench: create topic %s: code %d %s", t.Topic, resp.Code, resp.Remark)
	}
	return nil
}

// ServerCPU reads the server process's CPU time.
func (t *RemotingTarget) ServerCPU() (time.Duration, error) { return ProcessCPU(t.PID) }

// Producer opens a pipelined producer connection for stream i.
func (t *RemotingTarget) Producer(i int) (LoadProducer, error) {
	nc, err := net.DialTimeout("tcp", t.Addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	p := &remotingProducer{nc: nc, pending: map[int32]func(error){}, wake: make(chan struct{}, 1),
		done: make(chan struct{})}
	for q := range t.queues() {
		p.queueIDs = append(p.queueIDs, strconv.Itoa(i*t.queues()+q))
	}
	p.cmd = remoting.RemotingCommand{Code: remoting.CodeSendMessageV2, Language: remoting.LanguageGo,
		Version: remoting.DefaultVersion, ExtFields: map[string]string{
			"a": "bench_producer", "b": t.Topic, "c": record.DefaultTopic, "d": "4", "e": p.queueIDs[0],
			"f": "0", "g": "0", "h": "0", "i": "TAGS\x01TagA", "j": "0", "k": "false", "m": "false",
		}}
	go p.writeLoop()
	go p.readLoop()
	return p, nil
}

// remotingProducer encodes sends into a buffer that one goroutine writes
// whenever it holds something (so concurrent sends share a write), and
// reads responses in another, matching them by opaque.
type remotingProducer struct {
	nc   net.Conn
	wake chan struct{}
	done chan struct{}

	mu       sync.Mutex
	cmd      remoting.RemotingCommand
	queueIDs []string // the stream's queues, sent to in turn
	opaque   int32
	buf      []byte
	pending  map[int32]func(error)
	err      error
}

func (p *remotingProducer) Send(body []byte, done func(error)) error {
	p.mu.Lock()
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return err
	}
	p.opaque++
	p.cmd.Opaque, p.cmd.Body = p.opaque, body
	p.cmd.ExtFields["e"] = p.queueIDs[int(p.opaque)%len(p.queueIDs)]
	var err error
	p.buf, err = p.cmd.AppendFrame(p.buf)
	if err == nil {
		p.pending[p.opaque] = done
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return err
}

func (p *remotingProducer) writeLoop() {
	var out []byte
	for {
		select {
		case <-p.wake:
		case <-p.done:
			return
		}
		p.mu.Lock()
		out, p.buf = p.buf, out[:0]
		p.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		if _, err := p.nc.Write(out); err != nil {
			p.fail(err)
			return
		}
	}
}

func (p *remotingProducer) readLoop() {
	br := bufio.NewReaderSize(p.nc, 64<<10)
	for {
		resp, err := remoting.ReadFrame(br, 0)
		if err != nil {
			p.fail(err)
			return
		}
		p.mu.Lock()
		done := p.pending[resp.Opaque]
		delete(p.pending, resp.Opaque)
		p.mu.Unlock()
		if done == nil {
			continue
		}
		if resp.Code != remoting.CodeSuccess {
			done(fmt.Errorf("bench: send answered code %d: %s", resp.Code, resp.Remark))
			continue
		}
		done(nil)
	}
}

// fail ends the connection: every pending send fails with err.
func (p *remotingProducer) fail(err error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	pending := p.pending
	p.pending = map[int32]func(error){}
	p.mu.Unlock()
	for _, done := range pending {
		done(err)
	}
}

func (p *remotingProducer) Close() error {
	p.fail(net.ErrClosed)
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	return p.nc.Close()
}

// Consume long-polls stream i's queues from offset 0 on its own
// connection, one pull in flight per queue, and hands the pulled messages
// to fn from one goroutine (as a push consumer's pull threads feed its
// consume threads), so fn is never called concurrently for one stream.
func (t *RemotingTarget) Consume(i int, fn func(body []byte)) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	cl, err := remoting.Dial(ctx, t.Addr, remoting.ClientOptions{})
	if err != nil {
		cancel()
		return nil, err
	}
	bodies := make(chan []byte, t.queues())
	var wg, deliver sync.WaitGroup
	deliver.Add(1)
	go func() {
		defer deliver.Done()
		for b := range bodies {
			forEachBody(b, fn)
		}
	}()
	for q := range t.queues() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.pullLoop(ctx, cl, i*t.queues()+q, bodies)
		}()
	}
	return func() {
		cancel()
		_ = cl.Close()
		wg.Wait()
		close(bodies)
		deliver.Wait()
	}, nil
}

// Pull response codes (ResponseCode).
const (
	codePullNotFound       = 19
	codePullRetryImmediate = 20
	codePullOffsetMoved    = 21
)

// pullLoop pulls queue until ctx ends, sending each response's records to
// out.
func (t *RemotingTarget) pullLoop(ctx context.Context, cl *remoting.Client, queue int, out chan<- []byte) {
	var offset int64
	req := remoting.NewRequest(remoting.CodePullMessage, nil)
	req.SetExt("consumerGroup", t.Group)
	req.SetExt("topic", t.Topic)
	req.SetExtInt("queueId", int64(queue))
	req.SetExtInt("maxMsgNums", int64(t.pullBatch()))
	req.SetExtInt("sysFlag", 2|4) // FLAG_SUSPEND | FLAG_SUBSCRIPTION
	req.SetExtInt("commitOffset", 0)
	req.SetExtInt("suspendTimeoutMillis", 15000)
	req.SetExt("subscription", "*")
	req.SetExtInt("subVersion", 0)
	req.SetExt("expressionType", "TAG")
	for ctx.Err() == nil {
		req.SetExtInt("queueOffset", offset)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cl.Invoke(rctx, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, remoting.ErrConnClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64); err == nil {
			offset = next
		}
		switch resp.Code {
		case remoting.CodeSuccess:
			select {
			case out <- resp.Body:
			case <-ctx.Done():
				return
			}
		case codePullNotFound, codePullRetryImmediate, codePullOffsetMoved:
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// forEachBody calls fn with the body of each record in a pull response.
func forEachBody(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		info, err := record.Check(b, -1, false)
		if err != nil || int(info.Size) > len(b) || info.Size <= 0 {
			return
		}
		fn(info.Body)
		b = b[info.Size:]
	}
}
