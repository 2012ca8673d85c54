package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// GRPCTarget loads a rocketstore (or a RocketMQ 5.x proxy) through the
// 5.x gRPC MessagingService with the same shape as RemotingTarget:
// producer i sends to its QueuesPerStream queues in turn, each send one
// SendMessage call of one message (as the 5.x clients send), Window of
// them in flight on the producer's own connection; consumer i pops: one
// ReceiveMessage of up to ReceiveBatch messages (long polling) in flight
// on each of its queues, each batch acked with one AckMessage, as a 5.x
// SimpleConsumer does. The topic must exist (RemotingTarget.Prepare makes
// it on the same server).
type GRPCTarget struct {
	Addr  string // the gRPC endpoint
	PID   int    // the server process, for ServerCPU
	Topic string
	Group string // consumer group
	// QueuesPerStream is how many queues each producer stream writes and
	// its consumer reads (DefaultQueuesPerStream when 0).
	QueuesPerStream int
	// ReceiveBatch is each receive's batch size (32, the proxy's most,
	// when 0).
	ReceiveBatch int

	msgID atomic.Uint64 // message ids, unique in the run
}

func (t *GRPCTarget) queues() int {
	if t.QueuesPerStream <= 0 {
		return DefaultQueuesPerStream
	}
	return t.QueuesPerStream
}

// ServerCPU reads the server process's CPU time.
func (t *GRPCTarget) ServerCPU() (time.Duration, error) { return ProcessCPU(t.PID) }

func (t *GRPCTarget) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient(t.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// callCtx carries the client id every 5.x client sends.
func callCtx(ctx context.Context, client string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", client)
}

// Producer opens producer connection i.
func (t *GRPCTarget) Producer(i int) (LoadProducer, error) {
	conn, err := t.dial()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(callCtx(context.Background(), "bench-producer-"+strconv.Itoa(i)))
	return &grpcProducer{t: t, conn: conn, cl: rmqpb.NewMessagingServiceClient(conn), ctx: ctx, cancel: cancel,
		first: int32(i * t.queues()), sends: make(chan grpcSend)}, nil
}

// grpcProducer sends each message in its own SendMessage call on a
// goroutine of a pool that grows to the sends in flight (the calls
// pipeline over the connection's HTTP/2 streams), as the remoting driver
// keeps its window in flight on one connection; the completions are
// serialized (doneMu), as LoadProducer promises them. A send handed to a
// waiting goroutine runs on its grown stack, where a goroutine a send
// would start small and grow its stack by copying, on the cores the
// server shares.
type grpcProducer struct {
	t      *GRPCTarget
	conn   *grpc.ClientConn
	cl     rmqpb.MessagingServiceClient
	ctx    context.Context
	cancel context.CancelFunc
	first  int32 // the stream's first queue
	n      int32
	sends  chan grpcSend // to an idle sender; unbuffered
	wg     sync.WaitGroup
	doneMu sync.Mutex
}

// grpcSend is one message to send and its completion.
type grpcSend struct {
	m    *rmqpb.Message
	done func(error)
}

func (p *grpcProducer) Send(body []byte, done func(error)) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	tag := "TagA"
	qid := p.first + p.n%int32(p.t.queues())
	p.n++
	m := &rmqpb.Message{Topic: &rmqpb.Resource{Name: p.t.Topic}, Body: append([]byte(nil), body...),
		SystemProperties: &rmqpb.SystemProperties{Tag: &tag, MessageId: fmt.Sprintf("B%015X", p.t.msgID.Add(1)),
			QueueId: qid, BornTimestamp: timestamppb.Now(), MessageType: rmqpb.MessageType_NORMAL}}
	s := grpcSend{m: m, done: done}
	select {
	case p.sends <- s:
	default:
		p.wg.Add(1)
		go p.sender(s)
	}
	return nil
}

// sender sends s, then every send handed to it, until the producer
// closes.
func (p *grpcProducer) sender(s grpcSend) {
	defer p.wg.Done()
	for {
		r, err := p.cl.SendMessage(p.ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{s.m}})
		if err == nil && r.GetStatus().GetCode() != rmqpb.Code_OK {
			err = fmt.Errorf("bench: send answered %s: %s", r.GetStatus().GetCode(), r.GetStatus().GetMessage())
		}
		p.doneMu.Lock()
		s.done(err)
		p.doneMu.Unlock()
		select {
		case s = <-p.sends:
		case <-p.ctx.Done():
			return
		}
	}
}

func (p *grpcProducer) Close() error {
	p.cancel()
	p.wg.Wait()
	return p.conn.Close()
}

// Consume pops stream i's queues on its own connection until stop: one
// receive in flight a queue, each received batch handed to fn and then
// acked in one call.
func (t *GRPCTarget) Consume(i int, fn func(body []byte)) (func(), error) {
	conn, err := t.dial()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(callCtx(context.Background(), "bench-consumer-"+strconv.Itoa(i)))
	cl := rmqpb.NewMessagingServiceClient(conn)
	var wg sync.WaitGroup
	for q := range t.queues() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.popLoop(ctx, cl, int32(i*t.queues()+q), fn)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		_ = conn.Close()
	}, nil
}

// popLoop receives and acks queue until ctx ends.
func (t *GRPCTarget) popLoop(ctx context.Context, cl rmqpb.MessagingServiceClient, queue int32, fn func([]byte)) {
	batch := int32(t.ReceiveBatch)
	if batch <= 0 {
		batch = 32
	}
	topic, group := &rmqpb.Resource{Name: t.Topic}, &rmqpb.Resource{Name: t.Group}
	req := &rmqpb.ReceiveMessageRequest{Group: group, MessageQueue: &rmqpb.MessageQueue{Topic: topic, Id: queue},
		FilterExpression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"}, BatchSize: batch,
		InvisibleDuration: durationpb.New(time.Minute), LongPollingTimeout: durationpb.New(15 * time.Second)}
	for ctx.Err() == nil {
		stream, err := cl.ReceiveMessage(ctx, req)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var entries []*rmqpb.AckMessageEntry
		for {
			r, err := stream.Recv()
			if err != nil {
				break
			}
			if m := r.GetMessage(); m != nil {
				fn(m.GetBody())
				entries = append(entries, &rmqpb.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(),
					ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
			}
		}
		if len(entries) > 0 {
			if _, err := cl.AckMessage(ctx, &rmqpb.AckMessageRequest{Group: group, Topic: topic, Entries: entries}); err != nil &&
				ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
