package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func TestProduceConsumeExactlyOnce(t *testing.T) {
	t.Parallel()
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	p := newProducer(t, n.Addr)
	ctx := context.Background()
	const total = 200
	topic := "TopicE2E"
	for i := range total {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("body-%d", i)))
		m.WithTag([]string{"A", "B", "C"}[i%3])
		m.WithKeys([]string{"key-" + strconv.Itoa(i)})
		m.WithProperty("seq", strconv.Itoa(i))
		m.WithProperty("color", "blue")
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK || res.OffsetMsgID == "" {
			t.Fatalf("send %d: %+v", i, res)
		}
	}
	// A batch of 10 in one request.
	var batch []*primitive.Message
	for i := total; i < total+10; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("body-%d", i)))
		m.WithTag("A")
		m.WithProperty("seq", strconv.Itoa(i))
		m.WithProperty("color", "blue")
		batch = append(batch, m)
	}
	if res, err := p.SendSync(ctx, batch...); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch: %v %+v", err, res)
	}
	want := total + 10

	col, c := collect(t, consumerOpts(n.Addr, "GroupE2E"), topic, consumer.MessageSelector{})
	defer c.Shutdown()
	col.waitDistinct(t, 30*time.Second, want)
	time.Sleep(500 * time.Millisecond) // duplicates would show up now
	if d := col.dups(); len(d) > 0 {
		t.Fatalf("duplicates: %v", d)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for i := range want {
		m := col.msgs[strconv.Itoa(i)][0]
		if string(m.Body) != fmt.Sprintf("body-%d", i) || m.GetProperty("color") != "blue" || m.Topic != topic {
			t.Fatalf("message %d: %s %v", i, m.Body, m.GetProperties())
		}
		if i < total && (m.GetTags() != []string{"A", "B", "C"}[i%3] || m.GetKeys() != "key-"+strconv.Itoa(i)) {
			t.Fatalf("message %d: tags %q keys %q", i, m.GetTags(), m.GetKeys())
		}
	}
}
