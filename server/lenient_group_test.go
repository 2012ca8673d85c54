package server

import "testing"

// TestSubscriptionGroupOrderly: consumeMessageOrderly (RocketMQ 5.x's
// FIFO group switch) is read from the body, false when absent.
func TestSubscriptionGroupOrderly(t *testing.T) {
	g, err := parseSubscriptionGroup([]byte(`{"groupName":"G","consumeMessageOrderly":true}`))
	if err != nil || !g.ConsumeMessageOrderly {
		t.Fatalf("orderly group: %+v, %v", g, err)
	}
	if g, err = parseSubscriptionGroup([]byte(`{"groupName":"G"}`)); err != nil || g.ConsumeMessageOrderly {
		t.Fatalf("group without the field: %+v, %v", g, err)
	}
}
