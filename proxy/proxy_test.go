package proxy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type env struct {
	t    testing.TB
	b    *broker.Broker
	p    *proxy.Proxy
	addr string
	cl   rmqpb.MessagingServiceClient
}

// newEnv serves a broker on an in-memory store through a proxy on
// 127.0.0.1:0 and dials it (plaintext unless dial options are given).
func newEnv(t testing.TB, mod func(*proxy.Config), dial ...grpc.DialOption) *env {
	t.Helper()
	b, err := broker.Open(memfs.New(afero.NewMemMapFs()), broker.Config{
		Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: quiet},
		Index: index.Config{MaxHashSlotNum: 64, MaxIndexNum: 256}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := proxy.Config{Broker: b, BrokerName: "broker-a", ClusterName: "DefaultCluster", Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	if len(dial) == 0 {
		dial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(ln.Addr().String(), dial...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
		<-done
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []config.TopicConfig{
		{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: record.PermRead | record.PermWrite},
		{TopicName: "ReadOnly", ReadQueueNums: 2, WriteQueueNums: 2, Perm: record.PermRead},
		typedTopic("Fifo", config.MessageTypeFIFO), typedTopic("Delay", config.MessageTypeDelay),
		typedTopic("Tx", config.MessageTypeTransaction), typedTopic("Mixed", config.MessageTypeMixed),
	} {
		if err := b.Topics().Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, b: b, p: p, addr: ln.Addr().String(), cl: rmqpb.NewMessagingServiceClient(conn)}
}

// typedTopic is a read-write topic of two queues with a message.type.
func typedTopic(name string, typ config.MessageType) config.TopicConfig {
	return config.TopicConfig{TopicName: name, ReadQueueNums: 2, WriteQueueNums: 2, Perm: record.PermRead | record.PermWrite,
		Attributes: map[string]string{config.AttrMessageType: string(typ)}}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "test-client")
}

func msg(topic, id string) *rmqpb.Message {
	tag := "TagA"
	return &rmqpb.Message{Topic: &rmqpb.Resource{Name: topic}, Body: []byte("body-" + id),
		UserProperties: map[string]string{"color": "red"},
		SystemProperties: &rmqpb.SystemProperties{MessageId: id, Tag: &tag, Keys: []string{"k1", "k2"},
			BornTimestamp: timestamppb.New(time.UnixMilli(1700000000123)), MessageType: rmqpb.MessageType_NORMAL}}
}

func send(t *testing.T, ctx context.Context, cl rmqpb.MessagingServiceClient, m *rmqpb.Message) *rmqpb.SendMessageResponse {
	t.Helper()
	r, err := cl.SendMessage(ctx, &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestQueryRoute(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	r, err := e.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetStatus().GetCode() != rmqpb.Code_OK || len(r.GetMessageQueues()) != 2 {
		t.Fatalf("route of T: %v", r)
	}
	a := r.GetMessageQueues()[0].GetBroker().GetEndpoints().GetAddresses()[0]
	if got := net.JoinHostPort(a.GetHost(), itoa(a.GetPort())); got != e.addr {
		t.Errorf("route endpoint %s, want the gRPC address %s", got, e.addr)
	}
	ro, _ := e.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "ReadOnly"}})
	for _, q := range ro.GetMessageQueues() {
		if q.GetPermission() != rmqpb.Permission_READ {
			t.Errorf("read-only topic's queue %d has permission %s", q.GetId(), q.GetPermission())
		}
	}
}

func itoa(n int32) string { return big.NewInt(int64(n)).String() }

// TestStatusCodes: a client tells a missing topic from a topic it may
// not write from a busy server.
func TestStatusCodes(t *testing.T) {
	e := newEnv(t, func(c *proxy.Config) { c.MaxInFlight = 1 })
	ctx := ctxT(t)
	r, err := e.cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Missing"}})
	if err != nil || r.GetStatus().GetCode() != rmqpb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route of a missing topic: %v %v", r, err)
	}
	if r := send(t, ctx, e.cl, msg("Missing", "id1")); r.GetStatus().GetCode() != rmqpb.Code_TOPIC_NOT_FOUND {
		t.Errorf("send to a missing topic: %v", r.GetStatus())
	}
	if r := send(t, ctx, e.cl, msg("ReadOnly", "id2")); r.GetStatus().GetCode() != rmqpb.Code_FORBIDDEN {
		t.Errorf("send to a read-only topic: %v", r.GetStatus())
	}
	bad := msg("T", "id3")
	bad.UserProperties = map[string]string{"TAGS": "x"}
	if r := send(t, ctx, e.cl, bad); r.GetStatus().GetCode() != rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY {
		t.Errorf("send with a system property: %v", r.GetStatus())
	}
	// A held pull occupies the only in-flight slot.
	pctx, cancelPull := context.WithCancel(ctx)
	pull, err := e.cl.PullMessage(pctx, &rmqpb.PullMessageRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 0}, BatchSize: 1,
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.b.WaitHeldPulls(ctx, 1); err != nil {
		t.Fatalf("the pull was not held: %v", err)
	}
	if r := send(t, ctx, e.cl, msg("T", "id4")); r.GetStatus().GetCode() != rmqpb.Code_TOO_MANY_REQUESTS {
		t.Errorf("send over MaxInFlight: %v", r.GetStatus())
	}
	cancelPull()
	for {
		if _, err := pull.Recv(); err != nil {
			break
		}
	}
}

// TestSendAndPull: what a 5.x producer sends is stored as a 4.x message
// (tag, keys, UNIQ_KEY, user properties, born time) and read back whole
// by the 5.x pull API.
func TestSendAndPull(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	m := msg("T", "0102ABCDEF")
	m.SystemProperties.QueueId = 1
	r := send(t, ctx, e.cl, m)
	if r.GetStatus().GetCode() != rmqpb.Code_OK || r.GetEntries()[0].GetMessageId() != "0102ABCDEF" {
		t.Fatalf("send: %v", r)
	}
	stream, err := e.cl.PullMessage(ctx, &rmqpb.PullMessageRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 1}, BatchSize: 8,
		FilterExpression:   &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "TagA"},
		LongPollingTimeout: durationpb.New(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var pulled []*rmqpb.Message
	var next int64 = -1
	for {
		pr, err := stream.Recv()
		if err != nil {
			break
		}
		switch c := pr.GetContent().(type) {
		case *rmqpb.PullMessageResponse_Status:
			if c.Status.GetCode() != rmqpb.Code_OK {
				t.Fatalf("pull status %v", c.Status)
			}
		case *rmqpb.PullMessageResponse_Message:
			pulled = append(pulled, c.Message)
		case *rmqpb.PullMessageResponse_NextOffset:
			next = c.NextOffset
		}
	}
	if len(pulled) != 1 || next != 1 {
		t.Fatalf("pulled %d messages, next offset %d", len(pulled), next)
	}
	res, err := e.b.Store().GetMessage("T", 1, 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []*record.MessageExt
	for _, v := range res.Messages {
		x, err := record.Decode(v.Record, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	res.Release()
	if len(got) != 1 {
		t.Fatalf("stored %d messages in queue 1, want 1", len(got))
	}
	s := got[0]
	if s.Tags() != "TagA" || s.Keys() != "k1 k2" || s.Property(record.PropertyUniqClientMsgID) != "0102ABCDEF" ||
		s.Property("color") != "red" || s.BornTimestamp != 1700000000123 {
		t.Errorf("stored message %+v", s.Properties)
	}
	if s.BornHost.Addr().String() != "127.0.0.1" || s.BornHost.Port() == 0 {
		t.Errorf("stored born host %v, want the client's loopback address", s.BornHost)
	}
	sp := pulled[0].GetSystemProperties()
	if sp.GetMessageId() != "0102ABCDEF" || sp.GetTag() != "TagA" || strings.Join(sp.GetKeys(), ",") != "k1,k2" ||
		pulled[0].GetUserProperties()["color"] != "red" || sp.GetBornTimestamp().AsTime().UnixMilli() != 1700000000123 ||
		string(pulled[0].GetBody()) != "body-0102ABCDEF" {
		t.Errorf("pulled %v", pulled[0])
	}
	if _, ok := pulled[0].GetUserProperties()["UNIQ_KEY"]; ok {
		t.Error("a system property is among the user properties")
	}
	if u, _ := e.cl.UpdateOffset(ctx, &rmqpb.UpdateOffsetRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 1}, Offset: 1}); u.GetStatus().GetCode() != rmqpb.Code_OK {
		t.Fatalf("update offset: %v", u)
	}
	if g, _ := e.cl.GetOffset(ctx, &rmqpb.GetOffsetRequest{Group: &rmqpb.Resource{Name: "G"},
		MessageQueue: &rmqpb.MessageQueue{Topic: &rmqpb.Resource{Name: "T"}, Id: 1}}); g.GetOffset() != 1 {
		t.Errorf("get offset: %v", g)
	}
}

// TestTransaction: a transactional send is a half message until
// EndTransaction commits it; the transaction id must name a half message
// of the request's topic and message id.
func TestTransaction(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	m := msg("Tx", "TX1")
	m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
	m.SystemProperties.QueueId = 0
	r := send(t, ctx, e.cl, m)
	txid := r.GetEntries()[0].GetTransactionId()
	if r.GetStatus().GetCode() != rmqpb.Code_OK || txid == "" {
		t.Fatalf("transactional send: %v", r)
	}
	if n := e.b.Store().MaxOffsetInQueue("Tx", 0); n != 0 {
		t.Fatalf("the half message is visible: max offset %d", n)
	}
	end := func(id, txid string) rmqpb.Code {
		r, err := e.cl.EndTransaction(ctx, &rmqpb.EndTransactionRequest{Topic: &rmqpb.Resource{Name: "Tx"}, MessageId: id,
			TransactionId: txid, Resolution: rmqpb.TransactionResolution_COMMIT})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus().GetCode()
	}
	if c := end("OTHER", txid); c != rmqpb.Code_INVALID_TRANSACTION_ID {
		t.Errorf("commit with another message id: %s", c)
	}
	if c := end("TX1", "garbage"); c != rmqpb.Code_INVALID_TRANSACTION_ID {
		t.Errorf("commit with a malformed transaction id: %s", c)
	}
	if c := end("TX1", txid); c != rmqpb.Code_OK {
		t.Fatalf("commit: %s", c)
	}
	if err := e.b.Store().WaitDispatched(ctx, e.b.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if n := e.b.Store().MaxOffsetInQueue("Tx", 0); n != 1 {
		t.Fatalf("queue Tx/0 holds %d after the commit was dispatched, want 1", n)
	}
}

func TestUnsupported(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	if r, _ := e.cl.SyncLiteSubscription(ctx, &rmqpb.SyncLiteSubscriptionRequest{}); r.GetStatus().GetCode() != rmqpb.Code_UNSUPPORTED {
		t.Errorf("lite subscription: %v", r)
	}
}

const aclFile = `accounts:
  - accessKey: writerAK
    secretKey: writer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - T=PUB
`

// signed returns a context with the 5.x request signature of ak/sk.
func signed(ctx context.Context, ak, sk string) context.Context {
	dt := time.Now().UTC().Format("20060102T150405Z")
	m := hmac.New(sha1.New, []byte(sk))
	m.Write([]byte(dt))
	sig := strings.ToUpper(hex.EncodeToString(m.Sum(nil)))
	return metadata.AppendToOutgoingContext(ctx, "x-mq-date-time", dt,
		"authorization", "MQv2-HMAC-SHA1 Credential="+ak+", SignedHeaders=x-mq-date-time, Signature="+sig)
}

// TestACL: the 5.x signature is checked against plain_acl.yml's accounts
// with their topic permissions.
func TestACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclFile), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := acl.Open(acl.Config{File: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	e := newEnv(t, func(c *proxy.Config) { c.ACL = v })
	ctx := ctxT(t)
	for _, c := range []struct {
		name  string
		ctx   context.Context
		topic string
		want  rmqpb.Code
	}{
		{"unsigned", ctx, "T", rmqpb.Code_UNAUTHORIZED},
		{"wrong secret", signed(ctx, "writerAK", "nope"), "T", rmqpb.Code_UNAUTHORIZED},
		{"unknown key", signed(ctx, "ghost", "writer-secret"), "T", rmqpb.Code_UNAUTHORIZED},
		{"no PUB on the topic", signed(ctx, "writerAK", "writer-secret"), "ReadOnly", rmqpb.Code_UNAUTHORIZED},
		{"allowed", signed(ctx, "writerAK", "writer-secret"), "T", rmqpb.Code_OK},
	} {
		if r := send(t, c.ctx, e.cl, msg(c.topic, "A1")); r.GetStatus().GetCode() != c.want {
			t.Errorf("%s: %v, want %s", c.name, r.GetStatus(), c.want)
		}
	}
}

// testTLS returns a server certificate for 127.0.0.1 and a pool trusting it.
func testTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rocketstore test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, pool
}

// TestTLS: enforcing serves TLS clients only; permissive serves both on
// one port.
func TestTLS(t *testing.T) {
	srvTLS, pool := testTLS(t)
	tlsDial := grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(pool, ""))
	route := func(cl rmqpb.MessagingServiceClient) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cl.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}})
		return err
	}
	for _, mode := range []remoting.TLSMode{remoting.TLSEnforcing, remoting.TLSPermissive} {
		setTLS := func(c *proxy.Config) { c.TLSMode, c.TLS = mode, srvTLS }
		e := newEnv(t, setTLS, tlsDial)
		if err := route(e.cl); err != nil {
			t.Errorf("%s: TLS client: %v", mode, err)
		}
		conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		err = route(rmqpb.NewMessagingServiceClient(conn))
		_ = conn.Close()
		if mode == remoting.TLSEnforcing && err == nil {
			t.Error("enforcing: a plaintext client was served")
		}
		if mode == remoting.TLSPermissive && err != nil {
			t.Errorf("permissive: plaintext client: %v", err)
		}
	}
}
