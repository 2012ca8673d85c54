package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/server"
)

// grpcFront serves n's broker through the 5.x gRPC front, as `serve`
// does, and returns a client of it.
func grpcFront(t *testing.T, n *server.Node) rmqpb.MessagingServiceClient {
	t.Helper()
	p, err := proxy.New(proxy.Config{Broker: n.Broker, BrokerName: n.Server.Config().BrokerName,
		ClusterName: n.Server.Config().ClusterName, FallbackChecker: n.Server.TransactionChecker()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Serve(ln)
	}()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
		<-done
	})
	return rmqpb.NewMessagingServiceClient(conn)
}

// pull5 reads queue q of topic from offset 0 through the 5.x pull API.
func pull5(t *testing.T, ctx context.Context, cl rmqpb.MessagingServiceClient, topic string, q int32) []*rmqpb.Message {
	t.Helper()
	s, err := cl.PullMessage(ctx, &rmqpb.PullMessageRequest{Group: &rmqpb.Resource{Name: "Interop5"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: topic}, Id: q}, BatchSize: 32,
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var out []*rmqpb.Message
	for {
		r, err := s.Recv()
		if err != nil {
			return out
		}
		if m := r.GetMessage(); m != nil {
			out = append(out, m)
		}
	}
}

// TestInterop4x5x: a message sent by the 4.x Go client is read by a 5.x
// client, and one sent by a 5.x client (normal, transactional, delayed) is
// consumed by the 4.x Go client, with keys, tags, user properties, message
// ids and born and store times intact.
func TestInterop4x5x(t *testing.T) {
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	// Interop5to4 takes normal, transactional and delayed messages from
	// 5.x: a MIXED topic (as a topics.json of a RocketMQ broker with
	// enableMixedMessageType holds it).
	for topic, typ := range map[string]config.MessageType{"Interop4to5": config.MessageTypeNormal, "Interop5to4": config.MessageTypeMixed} {
		if err := n.Broker.Topics().Update(config.TopicConfig{TopicName: topic, ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: record.PermRead | record.PermWrite, Attributes: map[string]string{config.AttrMessageType: string(typ)}}); err != nil {
			t.Fatal(err)
		}
	}
	cl := grpcFront(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "interop-5x")

	// 4.x → 5.x
	p := newProducer(t, n.Addr)
	m4 := primitive.NewMessage("Interop4to5", []byte("from 4.x"))
	m4.WithTag("Tag4")
	m4.WithKeys([]string{"key-a", "key-b"})
	m4.WithProperty("user", "prop4")
	before := time.Now().UnixMilli()
	sr, err := p.SendSync(ctx, m4)
	if err != nil || sr.Status != primitive.SendOK {
		t.Fatalf("4.x send: %v %v", sr, err)
	}
	got := pull5(t, ctx, cl, "Interop4to5", 0)
	if len(got) != 1 {
		t.Fatalf("5.x read %d messages, want 1", len(got))
	}
	sp := got[0].GetSystemProperties()
	if sp.GetMessageId() != sr.MsgID || sp.GetTag() != "Tag4" || strings.Join(sp.GetKeys(), " ") != "key-a key-b" ||
		got[0].GetUserProperties()["user"] != "prop4" || string(got[0].GetBody()) != "from 4.x" {
		t.Errorf("5.x view of a 4.x message: %v (4.x id %s)", got[0], sr.MsgID)
	}
	if bt := sp.GetBornTimestamp().AsTime().UnixMilli(); bt < before-1000 || bt > time.Now().UnixMilli() {
		t.Errorf("born time %d, sent at %d", bt, before)
	}
	if st := sp.GetStoreTimestamp().AsTime().UnixMilli(); st < sp.GetBornTimestamp().AsTime().UnixMilli() {
		t.Errorf("store time %d before born time", st)
	}

	// 5.x → 4.x: normal, transactional (committed), delayed.
	col, c := collect(t, consumerOpts(n.Addr, "Interop4"), "Interop5to4", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"})
	defer func() { _ = c.Shutdown() }()
	born := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	send := func(id string, typ rmqpb.MessageType, deliverAt *timestamppb.Timestamp) *rmqpb.SendResultEntry {
		tag := "Tag5"
		r, err := cl.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{
			Topic: &rmqpb.Resource{Name: "Interop5to4"}, Body: []byte("from 5.x " + id),
			UserProperties: map[string]string{"seq": id, "user": "prop5"},
			SystemProperties: &rmqpb.SystemProperties{MessageId: id, Tag: &tag, Keys: []string{"k5-" + id},
				BornTimestamp: timestamppb.New(born), MessageType: typ, DeliveryTimestamp: deliverAt}}}})
		if err != nil || r.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("5.x send %s: %v %v", id, r, err)
		}
		return r.GetEntries()[0]
	}
	send("ID5NORMAL", rmqpb.MessageType_NORMAL, nil)
	tx := send("ID5TX", rmqpb.MessageType_TRANSACTION, nil)
	if r, err := cl.EndTransaction(ctx, &rmqpb.EndTransactionRequest{Topic: &rmqpb.Resource{Name: "Interop5to4"},
		MessageId: "ID5TX", TransactionId: tx.GetTransactionId(), Resolution: rmqpb.TransactionResolution_COMMIT}); err != nil ||
		r.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("commit: %v %v", r, err)
	}
	delayedAt := time.Now().Add(250 * time.Millisecond)
	send("ID5DELAY", rmqpb.MessageType_DELAY, timestamppb.New(delayedAt))
	ids := []string{"ID5NORMAL", "ID5TX", "ID5DELAY"}
	if !col.waitFor(t, 20*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.msgs) == len(ids)
	}) {
		t.Fatalf("the 4.x consumer got %d of %d", col.n.Load(), len(ids))
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, id := range ids {
		m := col.msgs[id][0]
		if m.MsgId != id || m.GetTags() != "Tag5" || m.GetKeys() != "k5-"+id || m.GetProperty("user") != "prop5" ||
			string(m.Body) != "from 5.x "+id || m.BornTimestamp != born.UnixMilli() {
			t.Errorf("4.x view of 5.x message %s: id %s tags %q keys %q user %q body %q born %d (want %d)", id, m.MsgId,
				m.GetTags(), m.GetKeys(), m.GetProperty("user"), m.Body, m.BornTimestamp, born.UnixMilli())
		}
	}
	if d := col.msgs["ID5DELAY"][0]; d.StoreTimestamp < delayedAt.UnixMilli() {
		t.Errorf("the delayed message was stored %d ms before its delivery time", delayedAt.UnixMilli()-d.StoreTimestamp)
	}
}
