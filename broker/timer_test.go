package broker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// manualTimerBroker is a manual-mode broker on a test clock (ms).
func manualTimerBroker(t *testing.T) (*broker.Broker, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := testConfig()
	cfg.BrokerName = "b1"
	cfg.Store.Clock = clock
	cfg.Store = hooks.WithManual(cfg.Store, true)
	cfg.Timer = timer.Config{PrecisionMs: 100, MaxDelay: time.Hour}
	b := open(t, memfs.New(nil), cfg)
	t.Cleanup(func() { _ = b.Close() })
	createTopic(t, b, "T", 1)
	return b, clock
}

func sendProps(t *testing.T, b *broker.Broker, props string) broker.SendResult {
	t.Helper()
	return b.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "PG", Topic: "T", QueueID: 0,
		Properties: props, Body: []byte("b")})
}

// TestTimerSendDeliverRecall: a send with TIMER_DELAY_MS is stored in the
// timer topic, answered with a recall handle, and delivered at its time;
// a recalled one is not; a recall after delivery, one too far and a
// malformed handle answer ILLEGAL_OPERATION; a delay beyond
// timerMaxDelaySec is refused.
func TestTimerSendDeliverRecall(t *testing.T) {
	ctx := context.Background()
	b, clock := manualTimerBroker(t)
	a := sendProps(t, b, "UNIQ_KEY\x01A\x02TIMER_DELAY_MS\x01250")
	c := sendProps(t, b, "UNIQ_KEY\x01C\x02TIMER_DELAY_MS\x01250")
	if a.Code != broker.Success || a.Topic != record.TimerTopic || a.RecallHandle == "" {
		t.Fatalf("%+v", a)
	}
	if r := b.Recall(ctx, "PG", "T", c.RecallHandle); r.Code != broker.Success || r.MsgID != "C" {
		t.Fatalf("recall: %+v", r)
	}
	if r := b.Recall(ctx, "PG", "T", "not a handle"); r.Code != broker.IllegalOperation {
		t.Fatalf("bad handle: %+v", r)
	}
	if r := b.Recall(ctx, "PG", "U", c.RecallHandle); r.Code != broker.TopicNotExist {
		t.Fatalf("other topic: %+v", r)
	}
	far := sendProps(t, b, "UNIQ_KEY\x01F\x02TIMER_DELAY_SEC\x013601")
	if far.Code != broker.MessageIllegal || !strings.Contains(far.Remark, "timerMaxDelaySec") {
		t.Fatalf("too far: %+v", far)
	}
	for _, step := range []int64{200, 99} { // due at +300 (250 rounded up)
		clock.Advance(time.Duration(step) * time.Millisecond)
		if _, err := b.DeliverDelayed(ctx); err != nil {
			t.Fatal(err)
		}
		if n := b.Store().MaxOffsetInQueue("T", 0); n != 0 {
			t.Fatalf("delivered %d at +%d", n, clock.Now().UnixMilli()-1_700_000_000_000)
		}
	}
	clock.Advance(1 * time.Millisecond)
	if _, err := b.DeliverDelayed(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.Store().MaxOffsetInQueue("T", 0); n != 1 {
		t.Fatalf("%d delivered at +300, want A only", n)
	}
	m := waitMessage(t, b, "T", 0, 0, time.Second)
	if m.Properties[record.PropertyUniqClientMsgID] != "A" || m.StoreTimestamp != 1_700_000_000_300 {
		t.Fatalf("delivered %v at %d", m.Properties, m.StoreTimestamp)
	}
	r := b.Recall(ctx, "PG", "T", a.RecallHandle)
	if r.Code != broker.IllegalOperation || !strings.Contains(r.Remark, "delivered already") {
		t.Fatalf("recall after delivery: %+v", r)
	}
	if p := b.Timer().Pending(); len(p) != 0 {
		t.Fatalf("pending %v", p)
	}
	// The delay levels still go through SCHEDULE_TOPIC_XXXX.
	if d := sendProps(t, b, "DELAY\x012\x02TIMER_DELAY_MS\x01250"); d.Topic != record.ScheduleTopic {
		t.Fatalf("delay level: %+v", d)
	}
	h, _ := timer.ParseRecallHandle(a.RecallHandle)
	if h.Topic != "T" || h.BrokerName != "b1" || h.MessageID != "A" || strconv.FormatInt(h.DeliverMs, 10) != "1700000000300" {
		t.Fatalf("handle %+v", h)
	}
}

// TestTimerDisabled: with timerWheelEnable false a timer send is refused.
func TestTimerDisabled(t *testing.T) {
	cfg := testConfig()
	cfg.Timer.Disabled = true
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	if r := sendProps(t, b, "TIMER_DELAY_SEC\x011"); r.Code != broker.MessageIllegal || !strings.Contains(r.Remark, "timerWheelEnable") {
		t.Fatalf("%+v", r)
	}
}

// TestTimerRealServices: with the real goroutines a timer message
// arrives in its queue, not before its time.
func TestTimerRealServices(t *testing.T) {
	cfg := testConfig()
	cfg.Timer = timer.Config{PrecisionMs: 100}
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	at := time.Now().UnixMilli() + 200
	if r := sendProps(t, b, "TIMER_DELIVER_MS\x01"+strconv.FormatInt(at, 10)); r.Code != broker.Success {
		t.Fatalf("%+v", r)
	}
	m := waitMessage(t, b, "T", 0, 0, 5*time.Second)
	if m.StoreTimestamp < at {
		t.Fatalf("delivered %d ms early", at-m.StoreTimestamp)
	}
}

// TestTimerInBatchRefused: a batch with a delivery time, in the batch's
// properties or a message's, is refused rather than stored at once.
func TestTimerInBatchRefused(t *testing.T) {
	b, _ := manualTimerBroker(t)
	for _, c := range []struct{ header, inner string }{
		{"TIMER_DELAY_SEC\x015", "KEYS\x01a"},
		{"", "__STARTDELIVERTIME\x0199999999999999"},
	} {
		r := b.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "PG", Topic: "T", QueueID: 0,
			Properties: c.header, Batch: true, Body: batchBody("KEYS\x01x", c.inner)})
		if r.Code != broker.MessageIllegal || !strings.Contains(r.Remark, "batch") {
			t.Fatalf("%q/%q: %+v", c.header, c.inner, r)
		}
	}
}
