package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/server"
)

// featureNode starts a node with the broker settings mod changes.
func featureNode(t testing.TB, dir string, mod func(*broker.Config)) *server.Node {
	t.Helper()
	return nodeWith(t, dir, "127.0.0.1:0", mod)
}

func resolver(addr string) primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{addr})
}

// TestPullConsumerDefaultBatch: the Go client's pull consumer sends
// maxMsgNums 0 unless WithPullBatchSize is set; 4.9 answers one message.
func TestPullConsumerDefaultBatch(t *testing.T) {
	t.Parallel()
	n := featureNode(t, t.TempDir(), nil)
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	for i := range 3 {
		m := primitive.NewMessage("PullTopic", []byte("p"+strconv.Itoa(i)))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := consumer.NewPullConsumer(consumer.WithNsResolver(resolver(n.Addr)), consumer.WithGroupName("PullGroup"),
		consumer.WithInstance(instance("pull")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("PullTopic", consumer.MessageSelector{}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < 3 && time.Now().Before(deadline) {
		cr, err := pc.Poll(context.Background(), time.Second)
		if err != nil {
			continue
		}
		got += len(cr.GetMsgList())
		pc.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	if got < 3 {
		t.Fatalf("polled %d messages of 3", got)
	}
}

// TestTraceRecords: a traced producer and consumer write Pub, SubBefore
// and SubAfter records to RMQ_SYS_TRACE_TOPIC (traceTopicEnable), which
// `rocketstore read` prints.
func TestTraceRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := featureNode(t, dir, func(bc *broker.Config) { bc.TraceTopicEnable = true })
	traceCfg := &primitive.TraceConfig{TraceTopic: "RMQ_SYS_TRACE_TOPIC", Access: primitive.Local,
		Resolver: resolver(n.Addr), GroupName: instance("trace")}
	p := newProducer(t, n.Addr, producer.WithTrace(traceCfg))
	m := primitive.NewMessage("TracedTopic", []byte("traced"))
	m.WithKeys([]string{"trace-key"})
	res, err := p.SendSync(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TraceOn || res.RegionID != "DefaultRegion" {
		t.Fatalf("send result: trace %v region %q", res.TraceOn, res.RegionID)
	}
	got := make(chan struct{}, 1)
	c, err := consumer.NewPushConsumer(append(consumerOpts(n.Addr, "TracedGroup"), consumer.WithTrace(traceCfg))...)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("TracedTopic", consumer.MessageSelector{}, func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		select {
		case got <- struct{}{}:
		default:
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("traced message not consumed")
	}
	want := []string{"Pub", "SubBefore", "SubAfter"}
	deadline := time.Now().Add(20 * time.Second)
	var types map[string]bool
	for {
		types = traceTypes(t, n)
		if (types["Pub"] && types["SubBefore"] && types["SubAfter"]) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = c.Shutdown()
	for _, w := range want {
		if !types[w] {
			t.Fatalf("trace records %v, missing %s", types, w)
		}
	}
	stopNode(t, n)
	// The records are readable with `rocketstore read`.
	out := rocketstoreRead(t, dir, "RMQ_SYS_TRACE_TOPIC")
	for _, w := range want {
		if !strings.Contains(out, w+"\x01") && !strings.Contains(out, w+`\u0001`) {
			t.Fatalf("rocketstore read shows no %s record:\n%s", w, out)
		}
	}
}

// traceTypes returns the record types in the trace topic.
func traceTypes(t *testing.T, n *server.Node) map[string]bool {
	types := map[string]bool{}
	s := n.Broker.Store()
	for off := s.MinOffsetInQueue("RMQ_SYS_TRACE_TOPIC", 0); off < s.MaxOffsetInQueue("RMQ_SYS_TRACE_TOPIC", 0); off++ {
		clo, err := s.CommitLogOffsetInQueue("RMQ_SYS_TRACE_TOPIC", 0, off)
		if err != nil {
			continue
		}
		m, err := s.LookMessageByOffset(clo)
		if err != nil {
			t.Fatal(err)
		}
		// Records are separated by \x02, fields by \x01; the first field
		// is the type.
		for _, rec := range strings.Split(string(m.Body), "\x02") {
			if typ, _, ok := strings.Cut(rec, "\x01"); ok {
				types[typ] = true
			}
		}
	}
	return types
}

var buildOnce sync.Once
var builtBinary string

// rocketstoreRead runs `rocketstore read --json` on a stopped store.
func rocketstoreRead(t *testing.T, dir, topic string) string {
	t.Helper()
	buildOnce.Do(func() {
		bin := filepath.Join(t.TempDir(), "rocketstore")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/rocketstore")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build rocketstore: %v\n%s", err, out)
		}
		builtBinary = bin
	})
	if builtBinary == "" {
		t.Fatal("rocketstore was not built")
	}
	out, err := exec.Command(builtBinary, "read", "--dir", dir, "--topic", topic, "--queue", "0", "--json", "--max", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("rocketstore read: %v\n%s", err, out)
	}
	// One JSON object per message: decode the bodies.
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Body string `json:"body"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			b.WriteString(m.Body)
		}
	}
	return b.String()
}

// TestSQL92Selector: a push consumer with a SQL92 selector receives only
// the matching messages when enablePropertyFilter is on.
func TestSQL92Selector(t *testing.T) {
	t.Parallel()
	n := featureNode(t, t.TempDir(), func(bc *broker.Config) { bc.EnablePropertyFilter = true })
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	for i := range 10 {
		m := primitive.NewMessage("SQLTopic", []byte("s"+strconv.Itoa(i)))
		m.WithProperty("a", strconv.Itoa(i))
		m.WithProperty("seq", strconv.Itoa(i))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	col, c := collect(t, consumerOpts(n.Addr, "SQLGroup"), "SQLTopic", consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5 AND a <> 8"})
	defer c.Shutdown()
	if !col.waitFor(t, 30*time.Second, func() bool { return col.distinct() >= 3 }) {
		t.Fatalf("consumed %d of 3", col.distinct())
	}
	time.Sleep(time.Second)
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.msgs) != 3 || col.msgs["6"] == nil || col.msgs["7"] == nil || col.msgs["9"] == nil {
		t.Fatalf("consumed %v, want 6, 7, 9", keys(col.msgs))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// txListener decides each transaction by its "decision" property and
// answers check-backs from a shared table.
type txListener struct {
	mu       sync.Mutex
	decided  map[string]primitive.LocalTransactionState
	checked  map[string]int
	onChange chan struct{}
}

func newTxListener() *txListener {
	return &txListener{decided: map[string]primitive.LocalTransactionState{}, checked: map[string]int{},
		onChange: make(chan struct{}, 16)}
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch m.GetProperty("decision") {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := m.GetProperty("seq")
	l.checked[k]++
	select {
	case l.onChange <- struct{}{}:
	default:
	}
	if s, ok := l.decided[k]; ok {
		return s
	}
	return primitive.UnkonwnState
}

func (l *txListener) decide(k string, s primitive.LocalTransactionState) {
	l.mu.Lock()
	l.decided[k] = s
	l.mu.Unlock()
}

func (l *txListener) checks(k string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checked[k]
}

func newTxProducer(t *testing.T, addr, group string, l *txListener) interface {
	SendMessageInTransaction(context.Context, *primitive.Message) (*primitive.TransactionSendResult, error)
	Shutdown() error
} {
	t.Helper()
	p, err := producer.NewTransactionProducer(l, producer.WithNsResolver(resolver(addr)), producer.WithGroupName(group),
		producer.WithInstanceName(instance("tx")), producer.WithRetry(2), producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTransactions: commit, rollback, unknown → check-back → commit, and
// a producer killed between the half message and its END_TRANSACTION,
// whose transaction another producer of the group commits when checked.
func TestTransactions(t *testing.T) {
	t.Parallel()
	n := featureNode(t, t.TempDir(), func(bc *broker.Config) {
		bc.Transaction.TimeOut = time.Second
		bc.Transaction.CheckInterval = 300 * time.Millisecond
	})
	defer stopNode(t, n)
	l := newTxListener()
	p := newTxProducer(t, n.Addr, "TxGroup", l)
	defer p.Shutdown()
	send := func(p interface {
		SendMessageInTransaction(context.Context, *primitive.Message) (*primitive.TransactionSendResult, error)
	}, seq, decision string) {
		m := primitive.NewMessage("TxTopic", []byte("tx-"+seq))
		m.WithProperty("seq", seq)
		m.WithProperty("decision", decision)
		if _, err := p.SendMessageInTransaction(context.Background(), m); err != nil {
			t.Fatalf("send %s: %v", seq, err)
		}
	}
	send(p, "commit", "commit")
	send(p, "rollback", "rollback")
	send(p, "unknown", "unknown")
	// The killed producer: its half message is stored, its END_TRANSACTION
	// never sent (the listener says unknown, then it is shut down).
	l2 := newTxListener()
	dead := newTxProducer(t, n.Addr, "TxGroup", l2)
	send(dead, "orphan", "unknown")
	_ = dead.Shutdown()
	// The survivor decides: commit both once checked back.
	l.decide("unknown", primitive.CommitMessageState)
	l.decide("orphan", primitive.CommitMessageState)

	col, c := collect(t, consumerOpts(n.Addr, "TxConsumers"), "TxTopic", consumer.MessageSelector{})
	defer c.Shutdown()
	if !col.waitFor(t, 60*time.Second, func() bool { return col.distinct() >= 3 }) {
		t.Fatalf("consumed %v (checks: unknown %d, orphan %d)", keys(col.msgs), l.checks("unknown"), l.checks("orphan"))
	}
	time.Sleep(2 * time.Second) // a duplicate or the rolled-back one would show now
	if d := col.dups(); len(d) > 0 {
		t.Fatalf("duplicates %v", d)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.msgs) != 3 || col.msgs["rollback"] != nil {
		t.Fatalf("consumed %v, want commit, unknown and orphan", keys(col.msgs))
	}
	if l.checks("unknown") == 0 || l.checks("orphan") == 0 {
		t.Fatalf("checks: unknown %d, orphan %d", l.checks("unknown"), l.checks("orphan"))
	}
	if col.msgs["commit"][0].GetProperty("REAL_TOPIC") != "" {
		t.Fatal("half-queue properties leaked into the committed message")
	}
}

// TestRequestReply uses the Go client's Request API: the consumer answers
// with CreateReplyMessage, the broker pushes the reply to the requester.
func TestRequestReply(t *testing.T) {
	t.Parallel()
	n := featureNode(t, t.TempDir(), nil)
	defer stopNode(t, n)
	// Request needs the topic's route (it does not fall back to TBW102).
	tc := config.NewTopicConfig("RPCTopic")
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	if err := n.Broker.Topics().Update(tc); err != nil {
		t.Fatal(err)
	}
	replier := newProducer(t, n.Addr)
	c, err := consumer.NewPushConsumer(consumerOpts(n.Addr, "RPCServers")...)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("RPCTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			r, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				return consumer.ConsumeRetryLater, err
			}
			r.Body = []byte("echo:" + string(m.Body))
			if _, err := replier.SendSync(context.Background(), r); err != nil {
				return consumer.ConsumeRetryLater, err
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	requester := newProducer(t, n.Addr).(interface {
		Request(context.Context, time.Duration, *primitive.Message) (*primitive.Message, error)
	})
	// Exactly one Request from a requester started just before it: the
	// broker must push the reply on the connection the request came from
	// even if the requester's heartbeat has not registered it yet. The
	// timeout covers the consumer's first rebalance (it consumes from the
	// first offset, so the request waits in the queue until then).
	reply, err := requester.Request(context.Background(), 30*time.Second, primitive.NewMessage("RPCTopic", []byte("ping")))
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Body) != "echo:ping" {
		t.Fatalf("reply %q", reply.Body)
	}
}
