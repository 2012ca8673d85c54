package proxy_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// TestReceiveLongPoll: a ReceiveMessage with a long polling timeout waits
// for a message sent while it waits and returns it, with a receipt
// handle and its first delivery attempt; the end of the stream is the
// delivery time; the received message counts as got, as a pulled one.
func TestReceiveLongPoll(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	stream, err := e.cl.ReceiveMessage(ctx, &rmqpb.ReceiveMessageRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: -1}, BatchSize: 1,
		FilterExpression:  &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		InvisibleDuration: durationpb.New(time.Minute), LongPollingTimeout: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if r := send(t, ctx, e.cl, msg("T", "LONGPOLL1")); r.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("send: %v", r)
	}
	var codes []rmqpb.Code
	var got []*rmqpb.Message
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		switch c := r.GetContent().(type) {
		case *rmqpb.ReceiveMessageResponse_Status:
			codes = append(codes, c.Status.GetCode())
		case *rmqpb.ReceiveMessageResponse_Message:
			got = append(got, c.Message)
		}
	}
	if len(codes) != 1 || codes[0] != rmqpb.Code_OK || len(got) != 1 {
		t.Fatalf("long-polling receive: statuses %v, %d messages", codes, len(got))
	}
	sp := got[0].GetSystemProperties()
	if sp.GetMessageId() != "LONGPOLL1" || sp.GetReceiptHandle() == "" || sp.GetDeliveryAttempt() != 1 {
		t.Errorf("received %v", got[0])
	}
	if _, gets := e.b.Stats().Totals(); gets != 1 || e.b.Stats().GroupGets()["T@G"] != 1 {
		t.Errorf("got total %d, by group %v: want the one received message", gets, e.b.Stats().GroupGets())
	}
}

// TestReceiveEndsOnStop: a receive waiting in its long poll is answered
// (MESSAGE_NOT_FOUND) when the proxy stops, so that the graceful stop
// does not wait out the poll or cut the stream.
func TestReceiveEndsOnStop(t *testing.T) {
	counted := make(chan struct{}, 1)
	t.Cleanup(proxy.OnStreamCounted(func() {
		select {
		case counted <- struct{}{}:
		default:
		}
	}))
	e := newEnv(t, nil)
	ctx := ctxT(t)
	stream, err := e.cl.ReceiveMessage(ctx, &rmqpb.ReceiveMessageRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: -1}, BatchSize: 1,
		FilterExpression:  &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		InvisibleDuration: durationpb.New(time.Minute), LongPollingTimeout: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The receive is being handled (counted in flight) before the stop.
	select {
	case <-counted:
	case <-ctx.Done():
		t.Fatal("the receive never reached the proxy")
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.p.Stop(sctx)
	}()
	r, err := stream.Recv()
	if err != nil || r.GetStatus().GetCode() != rmqpb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("the waiting receive at stop: %v, %v; want MESSAGE_NOT_FOUND", r, err)
	}
	<-stopped
}
