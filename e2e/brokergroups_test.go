package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// brokerGroup starts a broker-only node named name that registers with
// the name server ns.
func brokerGroup(t *testing.T, name, ns string) *server.Node {
	t.Helper()
	var bc broker.Config
	bc.Store.CommitLogFileSize = 8 << 20
	bc.Store.ConsumeQueueUnits = 20000
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0", Broker: bc,
		Server: server.Config{Role: server.RoleBroker, BrokerName: name, NamesrvAddr: []string{ns}, ScanInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTwoBrokerGroupsBehindOneNameServer: a name-server-only node and two
// broker-only nodes (broker-a, broker-b) serving one topic; the official
// Go client's producer spreads its sends over the queues of both groups and
// its push consumer receives every message from both.
func TestTwoBrokerGroupsBehindOneNameServer(t *testing.T) {
	t.Parallel()
	ns, err := server.StartNode(server.NodeConfig{Listen: "127.0.0.1:0", Server: server.Config{Role: server.RoleNameServer}})
	if err != nil {
		t.Fatal(err)
	}
	defer stopNode(t, ns)
	a := brokerGroup(t, "broker-a", ns.Addr)
	defer stopNode(t, a)
	b := brokerGroup(t, "broker-b", ns.Addr)
	defer stopNode(t, b)

	// The topic is created on both groups (mqadmin updateTopic -c).
	const topic = "TopicTwoGroups"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []*server.Node{a, b} {
		cl, err := remoting.Dial(ctx, n.BrokerAddr, remoting.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req := remoting.NewRequest(remoting.CodeUpdateAndCreateTopic, nil)
		for k, v := range map[string]string{"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"} {
			req.SetExt(k, v)
		}
		resp, err := cl.Invoke(ctx, req)
		_ = cl.Close()
		if err != nil || resp.Code != remoting.CodeSuccess {
			t.Fatalf("create topic on %s: %v %v", n.BrokerAddr, err, resp)
		}
	}
	// Both groups register the topic within a second or so.
	ncl, err := remoting.Dial(ctx, ns.Addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ncl.Close()
	for deadline := time.Now().Add(15 * time.Second); ; {
		req := remoting.NewRequest(remoting.CodeGetRouteInfoByTopic, nil)
		req.SetExt("topic", topic)
		resp, err := ncl.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code == remoting.CodeSuccess && bytesContains(resp.Body, "broker-a") && bytesContains(resp.Body, "broker-b") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("route never held both groups: %d %s %s", resp.Code, resp.Remark, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	p := newProducer(t, ns.Addr)
	const total = 80
	sentTo := map[string]int{}
	for i := range total {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("body-%d", i)))
		m.WithProperty("seq", strconv.Itoa(i))
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %+v", i, err, res)
		}
		sentTo[res.MessageQueue.BrokerName]++
	}
	if len(sentTo) != 2 || sentTo["broker-a"] < total/4 || sentTo["broker-b"] < total/4 {
		t.Fatalf("sends not spread over both groups: %v", sentTo)
	}

	col, c := collect(t, consumerOpts(ns.Addr, "GroupTwoGroups"), topic, consumer.MessageSelector{})
	defer c.Shutdown()
	col.waitDistinct(t, 60*time.Second, total)
	got := map[string]int{}
	col.mu.Lock()
	for _, ms := range col.msgs {
		got[ms[0].Queue.BrokerName]++
	}
	col.mu.Unlock()
	if got["broker-a"] != sentTo["broker-a"] || got["broker-b"] != sentTo["broker-b"] {
		t.Fatalf("consumed per group %v, sent %v", got, sentTo)
	}
}

func bytesContains(b []byte, s string) bool { return strings.Contains(string(b), s) }
