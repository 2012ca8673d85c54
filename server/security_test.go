package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/metrics/prom"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

const serverACL = `
accounts:
  - accessKey: producer1
    secretKey: producer-secret-1
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
    topicPerms:
      - denied=DENY
      - owned=PUB|SUB
  - accessKey: adminKey
    secretKey: admin-secret-1
    admin: true
`

type secEnv struct {
	*env
	logs    *syncBuffer
	metrics *prom.Metrics
	aclFile string
}

func newSecEnv(t *testing.T, aclYML string, mod func(*server.Security)) *secEnv {
	t.Helper()
	se := &secEnv{logs: &syncBuffer{}, metrics: prom.New("")}
	if aclYML != "" {
		se.aclFile = filepath.Join(t.TempDir(), "plain_acl.yml")
		if err := os.WriteFile(se.aclFile, []byte(aclYML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	se.env = newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Logger = slog.New(slog.NewTextHandler(se.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		sc.Metrics = se.metrics
		sc.Security = server.Security{ACLEnable: aclYML != "", ACLFile: se.aclFile, ACLReloadInterval: time.Hour}
		if mod != nil {
			mod(&sc.Security)
		}
	})
	return se
}

var secrets = map[string]string{"producer1": "producer-secret-1", "adminKey": "admin-secret-1"}

func signedCall(t testing.TB, cl *remoting.Client, ak string, code int32, body []byte, kv ...string) *remoting.RemotingCommand {
	t.Helper()
	req := remoting.NewRequest(code, body)
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	if ak != "" {
		acl.SignRequest(req, ak, secrets[ak], "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("invoke %d: %v", code, err)
	}
	return resp
}

func sendKV(topic string) []string {
	return []string{"a", "PG", "b", topic, "c", "TBW102", "d", "8", "e", "0", "f", "0", "g", "1", "h", "0", "i", "", "j", "0", "k", "false"}
}

func TestACLEnforced(t *testing.T) {
	se := newSecEnv(t, serverACL, nil)
	// Create the topics the test sends to, as an admin.
	for _, topic := range []string{"owned", "denied", "open"} {
		wantCode(t, signedCall(t, se.cl, "adminKey", remoting.CodeUpdateAndCreateTopic, nil, "topic", topic,
			"readQueueNums", "4", "writeQueueNums", "4", "perm", "6"), remoting.CodeSuccess)
	}
	cases := []struct {
		name   string
		ak     string
		code   int32
		kv     []string
		want   int32
		remark string
	}{
		{"unsigned send", "", remoting.CodeSendMessageV2, sendKV("owned"), remoting.CodeNoPermission, "no AccessKey"},
		{"signed send", "producer1", remoting.CodeSendMessageV2, sendKV("owned"), remoting.CodeSuccess, ""},
		{"default PUB send", "producer1", remoting.CodeSendMessageV2, sendKV("open"), remoting.CodeSuccess, ""},
		{"DENY topic", "producer1", remoting.CodeSendMessageV2, sendKV("denied"), remoting.CodeNoPermission, "no PUB permission on topic denied"},
		{"pull a PUB-only topic", "producer1", remoting.CodePullMessage, pullReq("g1", "open", 0, 0, 0, 0), remoting.CodeNoPermission, "no SUB permission on topic open"},
		{"pull an owned topic passes the ACL", "producer1", remoting.CodePullMessage, pullReq("g1", "owned", 0, 0, 0, 0), remoting.CodeSubscriptionNotExist, "group info"},
		{"non-admin creates a topic", "producer1", remoting.CodeUpdateAndCreateTopic, []string{"topic", "x1", "readQueueNums", "1", "writeQueueNums", "1", "perm", "6"},
			remoting.CodeNoPermission, "needs an admin account"},
		{"non-admin deletes a topic", "producer1", remoting.CodeDeleteTopicInBroker, []string{"topic", "owned"}, remoting.CodeNoPermission, "admin"},
		{"non-admin reads the ACL", "producer1", acl.CodeGetBrokerClusterACLConfig, nil, remoting.CodeNoPermission, "admin"},
		{"route query needs no key", "", remoting.CodeGetRouteInfoByTopic, []string{"topic", "owned"}, remoting.CodeSuccess, ""},
		{"auto-create without explicit PUB", "producer1", remoting.CodeSendMessageV2, sendKV("brandNew"), remoting.CodeNoPermission, "may not create topic brandNew"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := signedCall(t, se.cl, tc.ak, tc.code, []byte("m"), tc.kv...)
			if resp.Code != tc.want || !strings.Contains(resp.Remark, tc.remark) {
				t.Fatalf("code %d remark %q, want %d naming %q", resp.Code, resp.Remark, tc.want, tc.remark)
			}
		})
	}
	// A forged signature: the signed body replaced.
	req := remoting.NewRequest(remoting.CodeSendMessageV2, []byte("original"))
	for i := 0; i+1 < len(sendKV("owned")); i += 2 {
		req.SetExt(sendKV("owned")[i], sendKV("owned")[i+1])
	}
	acl.SignRequest(req, "producer1", secrets["producer1"], "")
	req.Body = []byte("forged")
	resp, err := se.cl.Invoke(context.Background(), req)
	if err != nil || resp.Code != remoting.CodeNoPermission || !strings.Contains(resp.Remark, "signature") {
		t.Fatalf("forged body: %v %v", resp, err)
	}
	if _, ok := se.b.Topics().Get("brandNew"); ok {
		t.Fatal("a refused auto-creation created the topic")
	}
	for reason, want := range map[string]float64{acl.ReasonUnsigned: 1, acl.ReasonNoPermission: 2, acl.ReasonNotAdmin: 3, acl.ReasonBadSignature: 1} {
		if got := counter(t, se.metrics, "rocketstore_acl_denied_total", reason); got != want {
			t.Errorf("denied{reason=%s} = %v, want %v", reason, got, want)
		}
	}
	logs := se.logs.String()
	if !strings.Contains(logs, "acl: request denied") {
		t.Error("denials not logged")
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Fatalf("a secret key appears in the logs:\n%s", logs)
		}
	}
}

// counter reads one labelled counter from the registry (0 if absent).
func counter(t *testing.T, m *prom.Metrics, name, label string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetValue() == label {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestACLAdminCodes(t *testing.T) {
	se := newSecEnv(t, serverACL, nil)
	wantCode(t, signedCall(t, se.cl, "producer1", acl.CodeUpdateAndCreateACLConfig, nil, "accessKey", "producer1", "secretKey", "new-secret-9", "admin", "true"),
		remoting.CodeNoPermission)
	wantCode(t, signedCall(t, se.cl, "adminKey", acl.CodeUpdateAndCreateACLConfig, nil, "accessKey", "consumer1", "secretKey", "consumer-secret-1",
		"admin", "false", "defaultTopicPerm", "SUB", "defaultGroupPerm", "SUB"), remoting.CodeSuccess)
	secrets["consumer1"] = "consumer-secret-1"
	wantCode(t, signedCall(t, se.cl, "consumer1", remoting.CodeQueryConsumerOffset, nil, "consumerGroup", "g", "topic", "TBW102", "queueId", "0"),
		remoting.CodeSuccess)
	wantCode(t, signedCall(t, se.cl, "consumer1", remoting.CodeSendMessageV2, []byte("x"), sendKV("TBW102")...), remoting.CodeNoPermission)
	// 54 lists the accounts, secrets masked; 52 reports the version.
	resp := signedCall(t, se.cl, "adminKey", acl.CodeGetBrokerClusterACLConfig, nil)
	wantCode(t, resp, remoting.CodeSuccess)
	var body struct {
		PlainAccessConfigs []struct {
			AccessKey, SecretKey string
		} `json:"plainAccessConfigs"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || len(body.PlainAccessConfigs) != 3 {
		t.Fatalf("54 body %s: %v", resp.Body, err)
	}
	if bytes.Contains(resp.Body, []byte("-secret-")) {
		t.Fatalf("54 answers secrets: %s", resp.Body)
	}
	resp = signedCall(t, se.cl, "adminKey", acl.CodeGetBrokerClusterACLInfo, nil)
	if resp.Code != remoting.CodeSuccess || !strings.Contains(resp.ExtFields["version"], `"counter":1`) {
		t.Fatalf("52: %v", resp)
	}
	wantCode(t, signedCall(t, se.cl, "adminKey", acl.CodeUpdateGlobalWhiteAddrsConfig, nil, "globalWhiteAddrs", "10.9.9.9", "aclFileFullPath", "/etc/passwd"), remoting.CodeSuccess)
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(se.aclFile)
	if !strings.Contains(string(data), "10.9.9.9") || !strings.Contains(string(data), "consumer1") {
		t.Fatalf("file after updates:\n%s", data)
	}
	wantCode(t, signedCall(t, se.cl, "adminKey", acl.CodeDeleteACLConfig, nil, "accessKey", "consumer1"), remoting.CodeSuccess)
	wantCode(t, signedCall(t, se.cl, "consumer1", remoting.CodeGetMaxOffset, nil, "topic", "TBW102", "queueId", "0"), remoting.CodeNoPermission)
	wantCode(t, signedCall(t, se.cl, "adminKey", acl.CodeDeleteACLConfig, nil, "accessKey", "consumer1"), 210)
	wantCode(t, signedCall(t, se.cl, "adminKey", acl.CodeUpdateAndCreateACLConfig, nil, "accessKey", "shortkey", "secretKey", "123"), 209)
	if strings.Contains(se.logs.String(), "consumer-secret-1") || strings.Contains(se.logs.String(), "new-secret-9") {
		t.Fatal("a secret from an ACL update was logged")
	}
}

func TestACLOffUnchanged(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.call(acl.CodeGetBrokerClusterACLConfig, nil), remoting.CodeRequestCodeNotSupported)
	resp := e.call(remoting.CodeSendMessageV2, []byte("x"), sendKV("anything")...)
	wantCode(t, resp, remoting.CodeSuccess)
}

func TestAutoCreateLimits(t *testing.T) {
	se := newSecEnv(t, "", func(s *server.Security) {
		s.Limits = server.Limits{AutoCreateTopicMaxPerClient: 2, AutoCreateTopicMaxQueueNums: 2}
	})
	wantCode(t, se.call(remoting.CodeSendMessageV2, []byte("x"), sendKV("t1")...), remoting.CodeSuccess)
	if tc, _ := se.b.Topics().Get("t1"); tc.WriteQueueNums != 2 {
		t.Fatalf("auto-created topic has %d queues, want the cap 2", tc.WriteQueueNums)
	}
	wantCode(t, se.call(remoting.CodeSendMessage, []byte("x"), "producerGroup", "PG", "topic", "t2", "defaultTopic", "TBW102",
		"defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "0", "bornTimestamp", "1", "flag", "0"), remoting.CodeSuccess)
	resp := se.call(remoting.CodeSendMessageV2, []byte("x"), sendKV("t3")...)
	if resp.Code != remoting.CodeTopicNotExist || !strings.Contains(resp.Remark, "auto-created 2 topics") {
		t.Fatalf("third auto-creation: %d %q", resp.Code, resp.Remark)
	}
	// Existing topics still take sends.
	wantCode(t, se.call(remoting.CodeSendMessageV2, []byte("x"), sendKV("t1")...), remoting.CodeSuccess)
	if got := counter(t, se.metrics, "rocketstore_topic_autocreate_refused_total", "max_per_client"); got != 1 {
		t.Fatalf("refusals counted %v", got)
	}
}

func TestAutoCreateMaxTotal(t *testing.T) {
	se := newSecEnv(t, "", func(s *server.Security) { s.Limits.AutoCreateTopicMaxTotal = 1 })
	resp := se.call(remoting.CodeSendMessageV2, []byte("x"), sendKV("t1")...)
	if resp.Code != remoting.CodeTopicNotExist || !strings.Contains(resp.Remark, "limit for auto-creation") {
		t.Fatalf("auto-creation over the total: %d %q", resp.Code, resp.Remark)
	}
}

// TestConnectionRateLimit runs the limiter behind a real connection: the
// burst passes, the requests over it wait for their token and succeed,
// one that would wait over a second is refused, and another connection
// has its own bucket. The waits' lengths are the limiter's
// (TestRateLimitWaits, on the injected clock); here they are only bounded
// below, which a loaded machine cannot break.
func TestConnectionRateLimit(t *testing.T) {
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Clock = standingClock{clockwork.NewRealClock(), time.Unix(1000, 0)}
		sc.Security.Limits = server.Limits{ConnRequestRate: 2, ConnRequestBurst: 3}
	})
	timed := func(cl *remoting.Client) (*remoting.RemotingCommand, time.Duration) {
		start := time.Now()
		resp := call(t, cl, remoting.CodeGetMaxOffset, nil, "topic", "TBW102", "queueId", "0")
		return resp, time.Since(start)
	}
	for i := range 3 {
		if resp, _ := timed(e.cl); resp.Code != remoting.CodeSuccess {
			t.Fatalf("request %d within the burst: %d %s", i, resp.Code, resp.Remark)
		}
	}
	// The clock stands still: the 4th request waits 0.5 s for its token,
	// the 5th 1 s, the 6th would wait 1.5 s and is refused.
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second} {
		if resp, d := timed(e.cl); resp.Code != remoting.CodeSuccess || d < want-50*time.Millisecond {
			t.Fatalf("request %d over the burst: %d after %v, want success after %v", 4+i, resp.Code, d, want)
		}
	}
	resp, _ := timed(e.cl)
	if resp.Code != remoting.CodeSystemBusy || !strings.Contains(resp.Remark, "connection_rate") {
		t.Fatalf("request over a second's wait: %d %q", resp.Code, resp.Remark)
	}
	// Another connection has its own bucket.
	other := e.dial(nil)
	defer other.Close()
	if resp, _ := timed(other); resp.Code != remoting.CodeSuccess {
		t.Fatalf("another connection: %d %s", resp.Code, resp.Remark)
	}
}

// standingClock is a clock whose time stands still while its timers run
// in real time: the limiter's buckets never refill, and its waits are
// real waits that a client times.
type standingClock struct {
	clockwork.Clock
	at time.Time
}

// Now is the time the clock stands at.
func (c standingClock) Now() time.Time { return c.at }

// testTLS writes a self-signed certificate for 127.0.0.1.
func testTLS(t *testing.T) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	_ = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

func TestTLSEnforcing(t *testing.T) {
	certPath, keyPath, pool := testTLS(t)
	se := newSecEnv(t, "", func(s *server.Security) {
		*s = server.Security{TLSMode: remoting.TLSEnforcing, TLSCertPath: certPath, TLSKeyPath: keyPath}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.DialTLS(ctx, se.adr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, remoting.ClientOptions{Options: remoting.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, call(t, cl, remoting.CodeGetMaxOffset, nil, "topic", "TBW102", "queueId", "0"), remoting.CodeSuccess)
	_ = cl.Close()
	// newEnv's own client is plain: the server must not answer it.
	if _, err := se.cl.Invoke(ctx, remoting.NewRequest(remoting.CodeGetMaxOffset, nil)); err == nil {
		t.Fatal("a plain client was served by an enforcing TLS server")
	}
	bad := server.Security{TLSMode: remoting.TLSEnforcing, TLSCertPath: certPath + ".missing", TLSKeyPath: keyPath}
	if _, err := server.New(se.b, server.Config{Logger: quiet, Security: bad}); err == nil {
		t.Fatal("a missing certificate was accepted")
	}
}

func TestSecurityFileConfig(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("aclEnable: true\ntlsServerMode: permissive\ntlsServerCertPath: c.pem\ntlsServerKeyPath: k.pem\n" +
		"autoCreateTopicMaxPerClient: 5\nautoCreateTopicMaxTotal: 100\nautoCreateTopicMaxQueueNums: 4\nconnRequestRateLimit: 1000\nconnRequestBurst: 10\nmaxInFlightRequests: 64\n"))
	if err != nil {
		t.Fatal(err)
	}
	nc := server.NodeConfig{Dir: "d"}
	fc.AclFile = new(string)
	*fc.AclFile = "/x/plain_acl.yml"
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	want := server.Security{ACLEnable: true, ACLFile: "/x/plain_acl.yml", TLSMode: remoting.TLSPermissive, TLSCertPath: "c.pem", TLSKeyPath: "k.pem",
		Limits: server.Limits{AutoCreateTopicMaxPerClient: 5, AutoCreateTopicMaxTotal: 100, AutoCreateTopicMaxQueueNums: 4,
			ConnRequestRate: 1000, ConnRequestBurst: 10, MaxInFlight: 64}}
	if nc.Server.Security != want {
		t.Fatalf("applied %+v, want %+v", nc.Server.Security, want)
	}
	if fc, err := server.ParseFileConfig([]byte("tlsServerMode: strict\n")); err != nil || fc.Apply(&server.NodeConfig{}) == nil {
		t.Fatal("tlsServerMode strict accepted")
	}
}

// TestACLViewMessageByID: looking a message up by id needs SUB on its
// topic, which is known only from the message.
func TestACLViewMessageByID(t *testing.T) {
	se := newSecEnv(t, serverACL, nil)
	for _, topic := range []string{"owned", "open"} {
		wantCode(t, signedCall(t, se.cl, "adminKey", remoting.CodeUpdateAndCreateTopic, nil, "topic", topic,
			"readQueueNums", "1", "writeQueueNums", "1", "perm", "6"), remoting.CodeSuccess)
	}
	offsetOf := func(topic string) string {
		resp := signedCall(t, se.cl, "producer1", remoting.CodeSendMessageV2, []byte("secret body"), sendKV(topic)...)
		wantCode(t, resp, remoting.CodeSuccess)
		id := resp.ExtFields["msgId"]
		off, err := strconv.ParseInt(id[len(id)-16:], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(off, 10)
	}
	owned, open := offsetOf("owned"), offsetOf("open")
	resp := signedCall(t, se.cl, "producer1", remoting.CodeViewMessageByID, nil, "offset", owned)
	if resp.Code != remoting.CodeSuccess || !bytes.Contains(resp.Body, []byte("secret body")) {
		t.Fatalf("viewing a message of a SUB topic: %d %q", resp.Code, resp.Remark)
	}
	resp = signedCall(t, se.cl, "producer1", remoting.CodeViewMessageByID, nil, "offset", open)
	if resp.Code != remoting.CodeNoPermission || !strings.Contains(resp.Remark, "no SUB permission on topic open") || len(resp.Body) != 0 {
		t.Fatalf("viewing a message of a PUB-only topic: %d %q body %d bytes", resp.Code, resp.Remark, len(resp.Body))
	}
	wantCode(t, signedCall(t, se.cl, "adminKey", remoting.CodeViewMessageByID, nil, "offset", open), remoting.CodeSuccess)
}
