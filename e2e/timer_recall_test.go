package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketstore/rocketstore/broker"
)

// TestTimerRecallRemoting: the official Go client (4.x protocol) sends
// two timer messages (TIMER_DELIVER_MS) and recalls one of them the way
// RocketMQ 5.x's remoting clients do: a message to the same topic with
// TIMER_DEL_UNIQKEY (topic+message id) and the same TIMER_DELIVER_MS. At
// their time only the other is consumed; a recall sent after its
// delivery is refused with an error that says so.
func TestTimerRecallRemoting(t *testing.T) {
	t.Parallel()
	n := nodeWith(t, t.TempDir(), "127.0.0.1:0", func(bc *broker.Config) { bc.Timer.PrecisionMs = 100 })
	defer stopNode(t, n)
	addr := n.Addr
	p := newProducer(t, addr)
	const topic = "TopicTimerRecall"
	due := time.Now().Add(3 * time.Second).UnixMilli()
	send := func(seq string, props ...string) (*primitive.SendResult, error) {
		m := primitive.NewMessage(topic, []byte("body-"+seq))
		m.WithProperty("seq", seq)
		m.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(due, 10))
		for i := 0; i+1 < len(props); i += 2 {
			m.WithProperty(props[i], props[i+1])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return p.SendSync(ctx, m)
	}
	kept, err := send("kept")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := send("recalled")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send("recall", "TIMER_DEL_UNIQKEY", topic+"+"+gone.MsgID); err != nil {
		t.Fatalf("recall of %s: %v", gone.MsgID, err)
	}
	col, c := collect(t, consumerOpts(addr, "GroupTimerRecall"), topic, consumer.MessageSelector{})
	defer c.Shutdown()
	if lost := col.waitForKeys(t, 30*time.Second, map[string]bool{"kept": true}); len(lost) > 0 {
		t.Fatalf("the timer not recalled was not consumed: %v", lost)
	}
	// The recalled message is in the same slot as the kept one: once the
	// slot is passed, the topic holds the kept one alone.
	if !col.waitFor(t, 10*time.Second, func() bool { return n.Broker.Timer().ReadTime() > due }) {
		t.Fatalf("the timer service did not pass the slot within 10 s")
	}
	var stored int64
	for _, q := range n.Broker.Store().Topics()[topic] {
		stored += n.Broker.Store().MaxOffsetInQueue(topic, q)
	}
	if stored != 1 {
		t.Errorf("the topic holds %d messages after the slot, want the kept one alone", stored)
	}
	col.mu.Lock()
	for k, ms := range col.msgs {
		if k != "kept" || len(ms) != 1 {
			t.Errorf("consumed %q %d times; want only kept, once", k, len(ms))
		}
		for _, m := range ms {
			if m.StoreTimestamp < due {
				t.Errorf("%s delivered %d ms early", k, due-m.StoreTimestamp)
			}
		}
	}
	col.mu.Unlock()
	_, err = send("late recall", "TIMER_DEL_UNIQKEY", topic+"+"+kept.MsgID)
	if err == nil || !strings.Contains(err.Error(), "delivered already") {
		t.Fatalf("a recall after the delivery answered %v, want an error that says delivered already", err)
	}
}
