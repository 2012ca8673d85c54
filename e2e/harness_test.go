package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/schedule"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// testLevels are short delay levels so that retries come back within
// tenths of a second (level 3, the first retry's, is 300 ms).
const testLevels = "100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 1s 1s 1s 1s 1s 1s 1s 1s 1s"

func TestMain(m *testing.M) {
	rlog.SetLogger(retryCounter{})
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}

// clientRetries counts the official client's send retries in this
// process. A SendSync retries at once when a broker answers
// SERVICE_NOT_AVAILABLE or SYSTEM_ERROR, as a leader that lost its
// leadership while committing does though the send may be stored; the
// client says so only in its log ("start retrying to send"), without
// naming the send, so a send during which the count moved may have been
// sent twice.
var clientRetries atomic.Int64

// retryCounter is the official client's logger in these tests: it counts
// retries (clientRetries), prints fatal messages, and drops the rest.
type retryCounter struct{}

func (retryCounter) Debug(string, map[string]any) {}
func (retryCounter) Info(string, map[string]any)  {}
func (retryCounter) Warning(msg string, _ map[string]any) {
	if strings.HasPrefix(msg, "start retrying to send") {
		clientRetries.Add(1)
	}
}
func (retryCounter) Error(string, map[string]any) {}
func (retryCounter) Fatal(msg string, fields map[string]any) {
	fmt.Fprintln(os.Stderr, "rocketmq client fatal:", msg, fields)
}
func (retryCounter) Level(string)            {}
func (retryCounter) OutputPath(string) error { return nil }

// node starts a server on dir at listen (127.0.0.1:0 for a new port).
func node(t testing.TB, dir, listen string) *server.Node {
	t.Helper()
	return nodeWithFlush(t, dir, listen, engine.AsyncFlush)
}

// nodeWithFlush is node with the given flush type.
func nodeWithFlush(t testing.TB, dir, listen string, flush engine.FlushDiskType) *server.Node {
	t.Helper()
	return nodeWith(t, dir, listen, func(bc *broker.Config) { bc.Store.FlushDiskType = flush })
}

// nodeWith starts a node with the tests' broker settings (small files,
// the test delay levels, offsets flushed every second) as mod changes them.
func nodeWith(t testing.TB, dir, listen string, mod func(*broker.Config)) *server.Node {
	t.Helper()
	levels, err := schedule.ParseLevels(testLevels)
	if err != nil {
		t.Fatal(err)
	}
	var bc broker.Config
	bc.Store.DelayLevels = levels
	bc.Store.CommitLogFileSize = 8 << 20
	bc.Store.ConsumeQueueUnits = 20000
	bc.FlushConsumerOffsetInterval = time.Second
	if mod != nil {
		mod(&bc)
	}
	n, err := server.StartNode(server.NodeConfig{Dir: dir, Listen: listen, Broker: bc,
		Server: server.Config{ScanInterval: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func stopNode(t testing.TB, n *server.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

var instances atomic.Int64

// instance returns a process-unique client instance name: the client keeps
// one global client per ip@instance.
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instances.Add(1))
}

func newProducer(t testing.TB, addr string, opts ...producer.Option) producerAPI {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{addr})),
		producer.WithGroupName(instance("pg")),
		producer.WithInstanceName(instance("p")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10 * time.Second),
	}, opts...)
	p, err := producer.NewDefaultProducer(all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

type producerAPI interface {
	SendSync(ctx context.Context, mq ...*primitive.Message) (*primitive.SendResult, error)
	Shutdown() error
}

func consumerOpts(addr, group string, extra ...consumer.Option) []consumer.Option {
	return append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{addr})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, extra...)
}

// startConsumer starts a push consumer of topic with opts that hands the
// messages to fn; the caller shuts it down.
func startConsumer(t testing.TB, opts []consumer.Option, topic string, sel consumer.MessageSelector,
	fn func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) interface{ Shutdown() error } {
	t.Helper()
	c, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, sel, fn); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// collectInto is a consume callback that records the messages in col.
func collectInto(col *collector) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			col.add(m)
		}
		return consumer.ConsumeSuccess, nil
	}
}

// collect starts a push consumer of topic with opts that records every
// message in a new collector; the caller shuts the consumer down.
func collect(t *testing.T, opts []consumer.Option, topic string, sel consumer.MessageSelector) (*collector, interface{ Shutdown() error }) {
	t.Helper()
	col := newCollector()
	return col, startConsumer(t, opts, topic, sel, collectInto(col))
}

// collector records consumed messages by a key property.
type collector struct {
	mu   sync.Mutex
	msgs map[string][]*primitive.MessageExt
	n    atomic.Int64
	ch   chan struct{}
}

func newCollector() *collector {
	return &collector{msgs: map[string][]*primitive.MessageExt{}, ch: make(chan struct{}, 1)}
}

func (c *collector) add(m *primitive.MessageExt) {
	c.mu.Lock()
	k := m.GetProperty("seq")
	c.msgs[k] = append(c.msgs[k], m)
	c.mu.Unlock()
	c.n.Add(1)
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds or the timeout passes.
func (c *collector) waitFor(t testing.TB, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return false
		case <-c.ch:
		case <-tick.C:
		}
	}
	return true
}

// waitDistinct waits until exactly n distinct messages are consumed and
// fails the test when the timeout passes first.
func (c *collector) waitDistinct(t testing.TB, timeout time.Duration, n int) {
	t.Helper()
	if !c.waitFor(t, timeout, func() bool { return c.distinct() == n }) {
		t.Fatalf("consumed %d distinct messages of %d within %v", c.distinct(), n, timeout)
	}
}

// missing returns the keys of want that no consumed message carries.
func (c *collector) missing(want map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range want {
		if len(c.msgs[k]) == 0 {
			out = append(out, k)
		}
	}
	return out
}

// waitForKeys waits until a message with each key of want is consumed and
// returns the keys still missing when the timeout passes.
func (c *collector) waitForKeys(t testing.TB, timeout time.Duration, want map[string]bool) []string {
	t.Helper()
	c.waitFor(t, timeout, func() bool { return len(c.missing(want)) == 0 })
	return c.missing(want)
}

func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *collector) dups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, v := range c.msgs {
		if len(v) > 1 {
			out = append(out, k)
		}
	}
	return out
}
