package proxy_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// TestDeliveryTimestampAndRecall: a message with a delivery timestamp is
// a timer message whose send answers a recall handle; RecallMessage with
// it succeeds; a malformed handle, one of another topic and one of a
// message already due answer BAD_REQUEST.
func TestDeliveryTimestampAndRecall(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	m := msg("Delay", "ID-LATER")
	m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
	at := time.Now().Add(time.Hour)
	m.SystemProperties.DeliveryTimestamp = timestamppb.New(at)
	r := send(t, ctx, e.cl, m)
	if len(r.GetEntries()) == 0 {
		t.Fatalf("send: %v", r)
	}
	entry := r.GetEntries()[0]
	if r.GetStatus().GetCode() != rmqpb.Code_OK || entry.GetRecallHandle() == "" {
		t.Fatalf("send: %v", r)
	}
	h, err := timer.ParseRecallHandle(entry.GetRecallHandle())
	if err != nil || h.Topic != "Delay" || h.MessageID != "ID-LATER" || h.DeliverMs < at.UnixMilli() || h.DeliverMs >= at.UnixMilli()+1000 {
		t.Fatalf("handle %+v %v", h, err)
	}
	rr, err := e.cl.RecallMessage(ctx, &rmqpb.RecallMessageRequest{Topic: &rmqpb.Resource{Name: "Delay"}, RecallHandle: entry.GetRecallHandle()})
	if err != nil || rr.GetStatus().GetCode() != rmqpb.Code_OK || rr.GetMessageId() != "ID-LATER" {
		t.Fatalf("recall: %v %v", rr, err)
	}
	due := h
	due.DeliverMs = time.Now().Add(-time.Second).UnixMilli()
	for _, c := range []struct{ topic, handle, want string }{
		{"Delay", "%%%", "invalid"},
		{"T", entry.GetRecallHandle(), "topic not match"},
		{"Delay", due.String(), "delivered already"},
	} {
		rr, err := e.cl.RecallMessage(ctx, &rmqpb.RecallMessageRequest{Topic: &rmqpb.Resource{Name: c.topic}, RecallHandle: c.handle})
		if err != nil || rr.GetStatus().GetCode() != rmqpb.Code_BAD_REQUEST || !strings.Contains(rr.GetStatus().GetMessage(), c.want) {
			t.Errorf("recall %s %q: %v %v", c.topic, c.handle, rr, err)
		}
	}
	// A timestamp further than timerMaxDelaySec is refused.
	far := msg("Delay", "ID-FAR")
	far.SystemProperties.MessageType = rmqpb.MessageType_DELAY
	far.SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(73 * time.Hour))
	if r := send(t, ctx, e.cl, far); r.GetStatus().GetCode() != rmqpb.Code_ILLEGAL_DELIVERY_TIME {
		t.Fatalf("far send: %v", r)
	}
}
