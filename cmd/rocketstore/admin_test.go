package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// adminNode starts an in-process server for the admin CLI tests.
func adminNode(t *testing.T) *server.Node {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: quiet}},
		Server: server.Config{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// mqadmin runs `rocketstore admin -n addr args...` and returns stdout,
// stderr and the exit code.
func mqadmin(t *testing.T, addr string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(append([]string{"admin", "-n", addr}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// ok runs a command that must succeed and returns its stdout.
func ok(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, errOut, code := mqadmin(t, addr, args...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// fails runs a command that must fail with a message containing want.
func fails(t *testing.T, addr, want string, args ...string) {
	t.Helper()
	out, errOut, code := mqadmin(t, addr, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		t.Fatalf("admin %v: exit %d, stderr %q (want it to contain %q), stdout %q", args, code, errOut, want, out)
	}
}

func wantAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestAdminCLITopicsMessagesAndOffsets(t *testing.T) {
	n := adminNode(t)
	a := n.Addr

	wantAll(t, ok(t, a, "updateTopic", "-t", "Orders", "-c", "DefaultCluster", "-r", "2", "-w", "2"), "create topic to "+n.BrokerAddr+" success")
	wantAll(t, ok(t, a, "topicList"), "Orders\n", "TBW102")
	wantAll(t, ok(t, a, "clusterList"), "DefaultCluster", "broker-a", "V4_9_4")
	wantAll(t, ok(t, a, "topicRoute", "-t", "Orders"), `"brokerName": "broker-a"`, `"readQueueNums": 2`)
	wantAll(t, ok(t, a, "brokerStatus", "-b", n.BrokerAddr), "brokerVersionDesc", "commitLogMaxOffset")

	// Three messages into queue 0 with keys and tags.
	var ids []string
	for _, k := range []string{"order-1", "order-2", "order-3"} {
		var res map[string]any
		if err := json.Unmarshal([]byte(ok(t, a, "sendMessage", "-t", "Orders", "-p", "body of "+k, "-k", k, "-c", "created", "-i", "0", "--json")), &res); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res["msgId"].(string))
	}
	// A send is acknowledged before its ConsumeQueue unit is dispatched.
	st := n.Broker.Store()
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.WaitDispatched(wctx, st.CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	wantAll(t, ok(t, a, "topicStatus", "-t", "Orders"), "#Broker Name", "broker-a      0     0            3")

	wantAll(t, ok(t, a, "queryMsgByKey", "-t", "Orders", "-k", "order-2"), "body(text)=body of order-2", `keys="order-2"`)
	wantAll(t, ok(t, a, "queryMsgById", "-i", ids[2]), "body of order-3", "queueOffset=2")
	wantAll(t, ok(t, a, "queryMsgByOffset", "-t", "Orders", "-i", "0", "-o", "1"), "body of order-2")
	out := ok(t, a, "consumeMessage", "-t", "Orders", "-i", "0", "-c", "2")
	if strings.Count(out, "body(text)=") != 2 || !strings.Contains(out, "body of order-1") {
		t.Fatalf("consumeMessage:\n%s", out)
	}

	// A group that consumed all 3: lag 0; reset to the start: lag 3.
	c, err := admin.NewClient([]string{a}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.UpdateConsumerOffset(ctx, n.BrokerAddr, "Billing", "Orders", 0, 3); err != nil {
		t.Fatal(err)
	}
	wantAll(t, ok(t, a, "consumerProgress", "-g", "Billing"), "Orders  broker-a      0     3               3                 0", "Diff Total: 0")
	var p progress
	if err := json.Unmarshal([]byte(ok(t, a, "consumerProgress", "-g", "Billing", "-t", "Orders", "--json")), &p); err != nil || p.DiffTotal != 0 || len(p.Queues) != 2 {
		t.Fatalf("progress %+v %v", p, err)
	}
	ok(t, a, "resetOffsetByTime", "-g", "Billing", "-t", "Orders", "-s", "0")
	wantAll(t, ok(t, a, "consumerProgress", "-g", "Billing", "-t", "Orders"), "Diff Total: 3")
	ok(t, a, "resetOffsetByTime", "-g", "Billing", "-t", "Orders", "-s", "-1")
	wantAll(t, ok(t, a, "consumerProgress", "-g", "Billing", "-t", "Orders"), "Diff Total: 0")

	// Bad input: a clear message, nothing changed.
	fails(t, a, "topic Nope does not exist", "topicStatus", "-t", "Nope")
	fails(t, a, "topic Nope does not exist", "resetOffsetByTime", "-g", "Billing", "-t", "Nope", "-s", "0")
	fails(t, a, `-s "yesterday" is not a time`, "resetOffsetByTime", "-g", "Billing", "-t", "Orders", "-s", "yesterday")
	fails(t, a, "offset 99 is outside queue 0 of Orders: its messages are at [0, 3)", "queryMsgByOffset", "-t", "Orders", "-i", "0", "-o", "99")
	fails(t, a, "topic Orders has no queue 7", "consumeMessage", "-t", "Orders", "-i", "7", "-o", "0")
	fails(t, a, "must not be negative", "queryMsgByOffset", "-t", "Orders", "-i", "0", "-o", "-5")
	fails(t, a, "has no offset for topic Orders", "resetOffsetByTime", "-g", "Nobody", "-t", "Orders", "-s", "0")
	fails(t, a, "queue numbers must be between 1 and 1024", "updateTopic", "-t", "Big", "-c", "DefaultCluster", "-w", "100000")
	fails(t, a, "is not an offset message id", "queryMsgById", "-i", "xyz")
	fails(t, a, "no message of topic Orders with key nope", "queryMsgByKey", "-t", "Orders", "-k", "nope")
	wantAll(t, ok(t, a, "consumerProgress", "-g", "Billing", "-t", "Orders"), "Diff Total: 0")
	if n.Broker.Offsets().Query("Nobody", "Orders", 0) != -1 {
		t.Fatal("a failed reset created offsets")
	}
	if _, ok := n.Broker.Topics().Get("Big"); ok {
		t.Fatal("a refused updateTopic created the topic")
	}

	// Groups.
	ok(t, a, "updateSubGroup", "-g", "Audit", "-b", n.BrokerAddr, "-r", "3")
	if g, found, _ := n.Broker.Groups().Find("Audit"); !found || g.RetryMaxTimes != 3 {
		t.Fatalf("group %+v %v", g, found)
	}
	ok(t, a, "deleteSubGroup", "-g", "Audit", "-b", n.BrokerAddr)
	fails(t, a, "subscription group Audit does not exist", "deleteSubGroup", "-g", "Audit", "-b", n.BrokerAddr)

	ok(t, a, "deleteTopic", "-t", "Orders", "-c", "DefaultCluster")
	if strings.Contains(ok(t, a, "topicList"), "Orders\n") {
		t.Fatal("topic still listed")
	}
}

func TestAdminCLIConnections(t *testing.T) {
	n := adminNode(t)
	a := n.Addr
	ok(t, a, "updateTopic", "-t", "T", "-b", n.BrokerAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, a, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hb := remoting.NewRequest(remoting.CodeHeartBeat, []byte(`{"clientID":"10.0.0.1@42","producerDataSet":[{"groupName":"PG"}],`+
		`"consumerDataSet":[{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",`+
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T","subString":"a || b","subVersion":1}]}]}`))
	if resp, err := cl.Invoke(ctx, hb); err != nil || resp.Code != 0 {
		t.Fatalf("heartbeat %v %v", resp, err)
	}
	wantAll(t, ok(t, a, "consumerConnection", "-g", "CG"), "10.0.0.1@42", "T       a || b", "ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING")
	wantAll(t, ok(t, a, "producerConnection", "-g", "PG", "-t", "T"), "10.0.0.1@42")
	fails(t, a, "consumer group Other is not online", "consumerConnection", "-g", "Other")
	fails(t, a, "producer group Other has no online producer", "producerConnection", "-g", "Other", "-t", "T")
}

func TestAdminCLIWithACL(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	path := dir + "/plain_acl.yml"
	if err := os.WriteFile(path, []byte("accounts:\n  - accessKey: opsadmin\n    secretKey: ops-secret-1\n    admin: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := server.StartNode(server.NodeConfig{Dir: dir + "/data", Listen: "127.0.0.1:0",
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: quiet}},
		Server: server.Config{Logger: quiet, Security: server.Security{ACLEnable: true, ACLFile: path}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	fails(t, n.Addr, "code 16", "updateTopic", "-t", "Locked", "-b", n.BrokerAddr)
	if _, ok := n.Broker.Topics().Get("Locked"); ok {
		t.Fatal("an unsigned updateTopic created the topic")
	}
	ok(t, n.Addr, "--accessKey", "opsadmin", "--secretKey", "ops-secret-1", "updateTopic", "-t", "Locked", "-b", n.BrokerAddr)
	wantAll(t, ok(t, n.Addr, "--accessKey", "opsadmin", "--secretKey", "ops-secret-1", "topicStatus", "-t", "Locked"), "broker-a")
}
