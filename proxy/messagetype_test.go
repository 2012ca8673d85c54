package proxy_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// typed is a message of the given 5.x type to topic: a message group for
// FIFO, a delivery timestamp for DELAY, a half message for TRANSACTION.
func typed(topic, id string, typ rmqpb.MessageType) *rmqpb.Message {
	m := msg(topic, id)
	sp := m.SystemProperties
	sp.MessageType = typ
	switch typ {
	case rmqpb.MessageType_FIFO:
		g := "group-1"
		sp.MessageGroup = &g
	case rmqpb.MessageType_DELAY:
		sp.DeliveryTimestamp = timestamppb.New(time.Now().Add(time.Hour))
	}
	return m
}

// TestMessageTypeRefused: a send whose message type differs from the
// topic's message.type is refused whole with RocketMQ 5.x's code and
// message and stores nothing; a MIXED topic takes every type; a topic
// auto-created by a 4.x send has no type attribute and is NORMAL.
func TestMessageTypeRefused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	if _, ok, err := e.b.Topics().CreateInSendMessage("Auto", record.DefaultTopic, 2, 0); !ok || err != nil {
		t.Fatalf("auto-create: %v %v", ok, err)
	}
	types := []rmqpb.MessageType{rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO, rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION}
	names := map[rmqpb.MessageType]string{rmqpb.MessageType_NORMAL: "NORMAL", rmqpb.MessageType_FIFO: "FIFO",
		rmqpb.MessageType_DELAY: "DELAY", rmqpb.MessageType_TRANSACTION: "TRANSACTION"}
	for _, tt := range []struct {
		topic  string
		typ    string // the topic's type in RocketMQ's message
		accept []rmqpb.MessageType
	}{
		{"T", "NORMAL", types[:1]},
		{"Auto", "NORMAL", types[:1]},
		{"Fifo", "FIFO", types[1:2]},
		{"Delay", "DELAY", types[2:3]},
		{"Tx", "TRANSACTION", types[3:]},
		{"Mixed", "MIXED", types},
	} {
		for _, typ := range types {
			r := send(t, ctx, e.cl, typed(tt.topic, "ID-"+tt.topic+"-"+names[typ], typ))
			if slices.Contains(tt.accept, typ) {
				if r.GetStatus().GetCode() != rmqpb.Code_OK {
					t.Errorf("%s message to %s topic %s: %v", names[typ], tt.typ, tt.topic, r.GetStatus())
				}
				continue
			}
			want := "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed, the expected type is " +
				tt.typ + ", but actual type is " + names[typ]
			if r.GetStatus().GetCode() != rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE || r.GetStatus().GetMessage() != want ||
				len(r.GetEntries()) != 0 {
				t.Errorf("%s message to %s topic %s: %v, want %s %q", names[typ], tt.typ, tt.topic, r, rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, want)
			}
		}
		rr, err := e.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: tt.topic}})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range rr.GetMessageQueues() {
			if !slices.Equal(q.GetAcceptMessageTypes(), tt.accept) {
				t.Errorf("route of %s: queue %d accepts %v, want %v", tt.topic, q.GetId(), q.GetAcceptMessageTypes(), tt.accept)
			}
		}
	}
	// The refused sends stored nothing: T holds its one NORMAL message
	// once the reput service has dispatched every record.
	if err := e.b.Store().WaitDispatched(ctx, e.b.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if n := e.b.Store().MaxOffsetInQueue("T", 0) + e.b.Store().MaxOffsetInQueue("T", 1); n != 1 {
		t.Errorf("topic T holds %d messages, want the one accepted", n)
	}
}
