package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	goadmin "github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/admin"
)

// The Go client's admin reads the subscription group table (201), which
// failed with "unexpected end of JSON input" before the admin codes.
func TestGoAdminGetAllSubscriptionGroup(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	c, err := admin.NewClient([]string{n.Addr}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.UpdateSubscriptionGroup(ctx, n.BrokerAddr, admin.SubscriptionGroupConfig{GroupName: "GoAdminGroup",
		ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 5, WhichBrokerWhenConsumeSlowly: 1}); err != nil {
		t.Fatal(err)
	}
	a, err := goadmin.NewAdmin(goadmin.WithResolver(primitive.NewPassthroughResolver([]string{n.Addr})))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w, err := a.GetAllSubscriptionGroup(ctx, n.BrokerAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := w.SubscriptionGroupTable["GoAdminGroup"]
	if !ok || g.RetryMaxTimes != 5 || !g.ConsumeEnable || w.DataVersion.Counter == 0 {
		t.Fatalf("group %+v in %d groups, version %+v", g, len(w.SubscriptionGroupTable), w.DataVersion)
	}
	if _, ok := w.SubscriptionGroupTable["TOOLS_CONSUMER"]; !ok {
		t.Fatal("system groups missing")
	}
}

// With a real Go producer and push consumer online, the admin codes that
// report on clients or call them through their connections work against
// what the official client sends and answers: 203, 204, 307, 309, 223 and
// 222 (the consumer rewinds and consumes the messages again).
func TestAdminCodesWithGoClients(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	// Producer and consumer share one client instance, so the consumer's
	// heartbeats (sent at start) carry the producer group too.
	inst := instance("shared")
	p := newProducer(t, n.Addr, producer.WithInstanceName(inst), producer.WithGroupName("PGAdminCodes"))
	sendN(t, p, "TopicAdminCodes", 0, 20, "")
	col, cons := collect(t, consumerOpts(n.Addr, "GroupAdminCodes", consumer.WithInstance(inst)), "TopicAdminCodes",
		consumer.MessageSelector{})
	defer cons.Shutdown()
	col.waitDistinct(t, 20*time.Second, 20)
	c, err := admin.NewClient([]string{n.Addr}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	cc, err := c.ConsumerConnection(ctx, n.BrokerAddr, "GroupAdminCodes")
	if err != nil || len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].Language != "GO" || cc.SubscriptionTable["TopicAdminCodes"].SubString != "*" {
		t.Fatalf("consumer connection %+v %v", cc, err)
	}
	clientID := cc.ConnectionSet[0].ClientID

	pc, err := c.ProducerConnection(ctx, n.BrokerAddr, "PGAdminCodes")
	if err != nil || len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].Language != "GO" {
		t.Fatalf("producer connection %+v %v", pc, err)
	}

	// 307: the client answers its running info through its connection.
	resp, err := c.Invoke(ctx, n.BrokerAddr, 307, nil, "consumerGroup", "GroupAdminCodes", "clientId", clientID, "jstackEnable", "false")
	if err != nil || !strings.Contains(string(resp.Body), `"properties"`) || !strings.Contains(string(resp.Body), "TopicAdminCodes") {
		t.Fatalf("running info %v %v", resp, err)
	}

	// 309: the client consumes one message directly.
	res, err := p.SendSync(ctx, primitive.NewMessage("TopicAdminCodes", []byte("direct")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = c.Invoke(ctx, n.BrokerAddr, 309, nil, "consumerGroup", "GroupAdminCodes", "clientId", clientID, "msgId", res.OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	var direct admin.ConsumeMessageDirectlyResult
	if err := admin.Unmarshal(resp.Body, &direct); err != nil || direct.ConsumeResult != "CR_SUCCESS" {
		t.Fatalf("consume directly %s: %+v %v", resp.Body, direct, err)
	}

	// 223: the client's offsets through 221.
	resp, err = c.Invoke(ctx, n.BrokerAddr, 223, nil, "topic", "TopicAdminCodes", "group", "GroupAdminCodes")
	if err != nil {
		t.Fatal(err)
	}
	var st admin.GetConsumerStatusBody
	if err := admin.Unmarshal(resp.Body, &st); err != nil {
		t.Fatalf("consumer status %s: %v", resp.Body, err)
	}
	if _, ok := st.ConsumerTable[clientID]; !ok {
		t.Fatalf("consumer status lacks %s: %s", clientID, resp.Body)
	}

	// 222: reset to the start; the client re-consumes everything.
	before := col.n.Load()
	table, err := c.ResetOffsetByTime(ctx, n.BrokerAddr, "GroupAdminCodes", "TopicAdminCodes", 0, true)
	if err != nil || len(table) == 0 {
		t.Fatalf("reset %v %v", table, err)
	}
	// rocketmq-client-go applies a reset by pausing its queues for 10 s and
	// pulls them again at its next rebalance (every 20 s): up to 30 s before
	// the first re-delivered message, so allow twice that.
	if !col.waitFor(t, 60*time.Second, func() bool { return col.n.Load() >= before+20 }) {
		t.Fatalf("after the reset the consumer got %d more messages, want >= 20", col.n.Load()-before)
	}
}
