package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/metrics/prom"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

const e2eACL = `
accounts:
  - accessKey: producerAK
    secretKey: producer-SK-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicPub=PUB
      - TopicSub=SUB
      - TopicDeny=DENY
      - TopicBoth=PUB|SUB
  - accessKey: consumerAK
    secretKey: consumer-SK-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicBoth=SUB
      - TopicPub=PUB
  - accessKey: adminAK12
    secretKey: admin-SK-12
    admin: true
`

var e2eTopics = []string{"TopicPub", "TopicSub", "TopicDeny", "TopicBoth", "TopicLater"}

// aclNode starts a node with ACL on, its rules in the default place
// (DIR/config/plain_acl.yml), the test's topics created, and metrics.
func aclNode(t *testing.T, yml string, sec server.Security) (*server.Node, string, *prom.Metrics) {
	t.Helper()
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "config", server.DefaultACLFile)
	if err := os.MkdirAll(filepath.Dir(aclFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(aclFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	sec.ACLEnable = yml != ""
	sec.ACLReloadInterval = 50 * time.Millisecond
	m := prom.New("")
	n, err := server.StartNode(server.NodeConfig{Dir: dir, Listen: "127.0.0.1:0",
		Broker: broker.Config{FlushConsumerOffsetInterval: time.Second},
		Server: server.Config{ScanInterval: time.Second, Security: sec, Metrics: m}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopNode(t, n) })
	for _, topic := range e2eTopics {
		tc := config.NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
		if err := n.Broker.Topics().Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	return n, aclFile, m
}

func creds(ak, sk string) primitive.Credentials {
	return primitive.Credentials{AccessKey: ak, SecretKey: sk}
}

// wantRefused checks a send failed with NO_PERMISSION (16) and a remark
// naming what.
func wantRefused(t *testing.T, p producerAPI, topic, what string) {
	t.Helper()
	_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("x")))
	if err == nil {
		t.Fatalf("send to %s accepted, want NO_PERMISSION", topic)
	}
	if !strings.Contains(err.Error(), "16") || !strings.Contains(err.Error(), what) {
		t.Fatalf("send to %s: %v; want code 16 naming %q", topic, err, what)
	}
}

func denials(t *testing.T, m *prom.Metrics, reason string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "rocketstore_acl_denied_total" {
			for _, mt := range mf.GetMetric() {
				if mt.GetLabel()[0].GetValue() == reason {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestACLWithOfficialClient(t *testing.T) {
	n, aclFile, m := aclNode(t, e2eACL, server.Security{})
	ctx := context.Background()

	good := newProducer(t, n.Addr, producer.WithCredentials(creds("producerAK", "producer-SK-1")))
	for _, topic := range []string{"TopicPub", "TopicBoth"} {
		if res, err := good.SendSync(ctx, primitive.NewMessage(topic, []byte("hello "+topic))); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send to %s with the right keys: %v %+v", topic, err, res)
		}
	}
	wantRefused(t, good, "TopicSub", "no PUB permission on topic TopicSub")
	wantRefused(t, good, "TopicDeny", "no PUB permission on topic TopicDeny")
	wantRefused(t, good, "TopicOther", "no PUB permission on topic TopicOther")
	if _, ok := n.Broker.Topics().Get("TopicOther"); ok {
		t.Fatal("a refused send auto-created its topic")
	}

	wrong := newProducer(t, n.Addr, producer.WithCredentials(creds("producerAK", "wrong-secret")))
	wantRefused(t, wrong, "TopicPub", "signature check failed")
	unknown := newProducer(t, n.Addr, producer.WithCredentials(creds("nobodyAK", "whatever-1")))
	wantRefused(t, unknown, "TopicPub", "no account for accessKey=nobodyAK")
	anonymous := newProducer(t, n.Addr)
	wantRefused(t, anonymous, "TopicPub", "no AccessKey")

	// A consumer with SUB on TopicBoth receives; one whose account only
	// has PUB on TopicPub is refused its pulls (and heartbeats).
	col, sub := collect(t, consumerOpts(n.Addr, "GroupACL",
		consumer.WithCredentials(creds("consumerAK", "consumer-SK-1"))), "TopicBoth", consumer.MessageSelector{})
	defer sub.Shutdown()
	if !col.waitFor(t, 30*time.Second, func() bool { return col.n.Load() >= 1 }) {
		t.Fatal("the consumer with SUB permission received nothing")
	}
	before := denials(t, m, "no_permission")
	got, bad := collect(t, consumerOpts(n.Addr, "GroupACL2",
		consumer.WithCredentials(creds("consumerAK", "consumer-SK-1"))), "TopicPub", consumer.MessageSelector{})
	defer bad.Shutdown()
	if !got.waitFor(t, 20*time.Second, func() bool { return denials(t, m, "no_permission") > before }) {
		t.Fatal("a consumer without SUB permission on TopicPub was not refused")
	}
	if got.n.Load() != 0 {
		t.Fatal("a consumer without SUB permission received messages")
	}

	// Admin-only operations: the official admin client (it signs only
	// after RegisterACL, which GetAllSubscriptionGroup calls).
	adminCreate := func(ak, sk, topic string) {
		a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{n.Addr})), admin.WithCredentials(creds(ak, sk)))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		_, _ = a.GetAllSubscriptionGroup(ctx, n.BrokerAddr, 3*time.Second)
		_ = a.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(n.BrokerAddr))
	}
	notAdmin := denials(t, m, "not_admin")
	adminCreate("producerAK", "producer-SK-1", "TopicByProducer")
	if _, ok := n.Broker.Topics().Get("TopicByProducer"); ok || denials(t, m, "not_admin") != notAdmin+1 {
		t.Fatal("a non-admin account created a topic")
	}
	adminCreate("adminAK12", "admin-SK-12", "TopicByAdmin")
	if _, ok := n.Broker.Topics().Get("TopicByAdmin"); !ok {
		t.Fatal("the admin account could not create a topic")
	}

	// Hot reload: grant TopicLater to the producer by editing the file;
	// the running producer's next sends succeed without a restart.
	wantRefused(t, good, "TopicLater", "no PUB permission on topic TopicLater")
	edited := strings.Replace(e2eACL, "      - TopicBoth=PUB|SUB\n", "      - TopicBoth=PUB|SUB\n      - TopicLater=PUB\n", 1)
	if err := os.WriteFile(aclFile, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := good.SendSync(ctx, primitive.NewMessage("TopicLater", []byte("after reload")))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded grant did not take effect: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A broken edit keeps the rules in force.
	if err := os.WriteFile(aclFile, []byte("accounts: [broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := good.SendSync(ctx, primitive.NewMessage("TopicLater", []byte("still granted"))); err != nil {
		t.Fatalf("a broken ACL edit changed the rules: %v", err)
	}
	wantRefused(t, good, "TopicDeny", "no PUB permission")
}

// e2eCert writes a self-signed certificate for 127.0.0.1.
func e2eCert(t *testing.T) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestTLSWithOfficialClient: with tlsServerMode permissive, TLS clients
// (WithTls(true)) and plain ones share the port; with enforcing, a TLS
// producer works together with ACL credentials and a plain one cannot
// send.
//
// The Go client's WithTls writes a process-wide default
// (remote.DefaultRemotingClientConfig), which would turn every other
// test's clients to TLS; so the test runs in a child process of its own.
func TestTLSWithOfficialClient(t *testing.T) {
	if os.Getenv("ROCKETSTORE_E2E_TLS_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTLSWithOfficialClient$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "ROCKETSTORE_E2E_TLS_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTLSWithOfficialClient/enforcing_with_ACL") {
			t.Fatalf("TLS test process: %v\n%s", err, out)
		}
		return
	}
	certPath, keyPath := e2eCert(t)
	ctx := context.Background()
	t.Run("permissive", func(t *testing.T) {
		n, _, _ := aclNode(t, "", server.Security{TLSMode: remoting.TLSPermissive, TLSCertPath: certPath, TLSKeyPath: keyPath})
		p := newProducer(t, n.Addr, producer.WithTls(true))
		if _, err := p.SendSync(ctx, primitive.NewMessage("TopicBoth", []byte("over TLS"))); err != nil {
			t.Fatalf("TLS send: %v", err)
		}
		plain := newProducer(t, n.Addr, producer.WithTls(false))
		if _, err := plain.SendSync(ctx, primitive.NewMessage("TopicBoth", []byte("plain"))); err != nil {
			t.Fatalf("plain send on the permissive port: %v", err)
		}
		col, c := collect(t, consumerOpts(n.Addr, "GroupTLS", consumer.WithTls(true)), "TopicBoth", consumer.MessageSelector{})
		defer c.Shutdown()
		if !col.waitFor(t, 30*time.Second, func() bool { return col.n.Load() >= 2 }) {
			t.Fatalf("TLS consumer received %d of 2", col.n.Load())
		}
	})
	t.Run("enforcing with ACL", func(t *testing.T) {
		n, _, _ := aclNode(t, e2eACL, server.Security{TLSMode: remoting.TLSEnforcing, TLSCertPath: certPath, TLSKeyPath: keyPath})
		p := newProducer(t, n.Addr, producer.WithTls(true), producer.WithCredentials(creds("producerAK", "producer-SK-1")))
		if _, err := p.SendSync(ctx, primitive.NewMessage("TopicPub", []byte("TLS and ACL"))); err != nil {
			t.Fatalf("TLS send with credentials: %v", err)
		}
		plain, err := producer.NewDefaultProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{n.Addr})),
			producer.WithGroupName(instance("pg")), producer.WithInstanceName(instance("p")), producer.WithRetry(0),
			producer.WithSendMsgTimeout(2*time.Second), producer.WithCredentials(creds("producerAK", "producer-SK-1")), producer.WithTls(false))
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Start(); err == nil {
			defer plain.Shutdown()
			if _, err := plain.SendSync(ctx, primitive.NewMessage("TopicPub", []byte("plain"))); err == nil {
				t.Fatal("a plain client sent to an enforcing TLS server")
			}
		}
	})
}
