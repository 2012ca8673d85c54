package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/console/internal/consoletest"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	t   *testing.T
	n   *server.Node
	c   *console.Console
	hs  *httptest.Server
	adm *admin.Client
	// user, pass for basic auth (ACL tests).
	user, pass string
}

func newEnv(t *testing.T, cfg console.Config, sec ...server.Security) *env {
	t.Helper()
	cc := consoletest.Config{Console: cfg}
	if len(sec) > 0 {
		cc.Security = &sec[0]
	}
	ce := consoletest.Start(t, cc)
	return &env{t: t, n: ce.Node, c: ce.Console, hs: ce.HTTP, adm: ce.Admin}
}

// do sends a request; a non-nil body makes it a console POST.
func (e *env) do(method, path string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.hs.URL+path, rd)
	if method == http.MethodPost {
		req.Header.Set("X-Rocketstore-Console", "1")
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) get(path string, v any) {
	e.t.Helper()
	code, b := e.do(http.MethodGet, path, nil)
	if code != 200 {
		e.t.Fatalf("GET %s: %d %s", path, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

func (e *env) post(path string, body, v any) {
	e.t.Helper()
	code, b := e.do(http.MethodPost, path, body)
	if code != 200 {
		e.t.Fatalf("POST %s: %d %s", path, code, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// refused posts body and wants the status and a message containing want.
func (e *env) refused(path string, body any, status int, want string) {
	e.t.Helper()
	code, b := e.do(http.MethodPost, path, body)
	if code != status || !strings.Contains(string(b), want) {
		e.t.Fatalf("POST %s %v: %d %s, want %d with %q", path, body, code, b, status, want)
	}
}

func (e *env) waitQueue(topic string, qid int32, n int64) {
	e.t.Helper()
	st := e.n.Broker.Store()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.WaitDispatched(ctx, st.CommitLog().MaxOffset()); err != nil {
		e.t.Fatalf("waiting for %s/%d to reach %d: %v", topic, qid, n, err)
	}
	if got := st.MaxOffsetInQueue(topic, qid); got < n {
		e.t.Fatalf("%s/%d holds %d after the dispatch of every put, want %d", topic, qid, got, n)
	}
}

func TestConsoleTopicsMessagesGroups(t *testing.T) {
	e := newEnv(t, console.Config{})
	var brokers []console.Broker
	e.get("/api/cluster", &brokers)
	if len(brokers) != 1 || brokers[0].Version != "V4_9_4" || brokers[0].Uptime == "" {
		t.Fatalf("cluster %+v", brokers)
	}
	// Uptime and disk read as words, not as the broker's raw strings.
	if b := brokers[0]; !regexp.MustCompile(`^(\d+[dhm] )*\d+[dhms]$`).MatchString(b.Uptime) ||
		!regexp.MustCompile(`^\d+\.\d [KMGTPE]?i?B free of \d+\.\d [KMGTPE]?i?B$`).MatchString(b.Disk) {
		t.Errorf("uptime %q, disk %q", b.Uptime, b.Disk)
	}

	// Create: validation first, nothing created on bad input.
	e.refused("/api/topic", console.CreateTopic{Topic: "bad name", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, 400, "topic name")
	e.refused("/api/topic", console.CreateTopic{Topic: "Big", ReadQueueNums: 1, WriteQueueNums: 5000, Perm: 6}, 400, "between 1 and 1024")
	e.refused("/api/topic", console.CreateTopic{Topic: "Big", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 9}, 400, "perm 9")
	if _, ok := e.n.Broker.Topics().Get("Big"); ok {
		t.Fatal("a refused create made the topic")
	}
	code, _ := e.do(http.MethodGet, "/api/topic?topic=Nope", nil)
	if code != 404 {
		t.Fatalf("unknown topic: %d", code)
	}
	// A POST without the console header (a cross-site form) is refused.
	resp, err := http.Post(e.hs.URL+"/api/topic", "application/json", strings.NewReader(`{"topic":"X","readQueueNums":1,"writeQueueNums":1,"perm":6}`))
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("headerless POST: %v %v", resp, err)
	}
	resp.Body.Close()

	e.post("/api/topic", console.CreateTopic{Topic: "Orders", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, nil)
	var sent map[string]any
	for _, k := range []string{"o-1", "o-2", "o-3"} {
		e.post("/api/message", console.SendForm{Topic: "Orders", Tags: "new", Keys: k, Body: "order " + k}, &sent)
	}
	e.waitQueue("Orders", 0, 3)
	var topic struct {
		Queues []console.Queue `json:"queues"`
	}
	e.get("/api/topic?topic=Orders", &topic)
	if len(topic.Queues) != 2 || topic.Queues[0].MaxOffset != 3 {
		t.Fatalf("queues %+v", topic.Queues)
	}

	// Search: by key, by id, by time range; bad input refused.
	var msgs []console.Message
	e.get("/api/messages?topic=Orders&key=o-2", &msgs)
	if len(msgs) != 1 || msgs[0].Body != "order o-2" {
		t.Fatalf("by key %+v", msgs)
	}
	e.get("/api/messages?msgId="+sent["msgId"].(string), &msgs)
	if len(msgs) != 1 || msgs[0].Keys != "o-3" {
		t.Fatalf("by id %+v", msgs)
	}
	e.get("/api/messages?topic=Orders&begin="+url.QueryEscape(time.Now().Add(-time.Minute).Format("2006-01-02T15:04:05")), &msgs)
	if len(msgs) != 3 {
		t.Fatalf("by time %+v", msgs)
	}
	e.get("/api/messages?topic=Orders&begin="+url.QueryEscape(time.Now().Add(time.Hour).Format("2006-01-02T15:04:05")), &msgs)
	if len(msgs) != 0 {
		t.Fatalf("future range %+v", msgs)
	}
	for path, want := range map[string]string{
		"/api/messages?topic=Orders&begin=yesterday": "is not a time",
		"/api/messages?msgId=xyz":                    "not an offset message id",
		"/api/messages?topic=Nope":                   "does not exist",
	} {
		code, b := e.do(http.MethodGet, path, nil)
		if code < 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", path, code, b)
		}
	}

	// Consumption state: Billing consumed 2 of queue 0, Audit none.
	ctx := context.Background()
	_ = e.adm.UpdateConsumerOffset(ctx, e.n.BrokerAddr, "Billing", "Orders", 0, 2)
	_ = e.adm.UpdateConsumerOffset(ctx, e.n.BrokerAddr, "Audit", "Orders", 0, 0)
	var detail console.Message
	e.get("/api/message?msgId="+msgs0ID(t, e, "o-2"), &detail)
	if detail.Consumption["Billing"] != "CONSUMED" || detail.Consumption["Audit"] != "NOT_CONSUMED" || detail.Properties["KEYS"] != "o-2" {
		t.Fatalf("detail %+v", detail)
	}
	e.get("/api/message?msgId="+msgs0ID(t, e, "o-3"), &detail)
	if detail.Consumption["Billing"] != "NOT_CONSUMED" {
		t.Fatalf("o-3 consumption %+v", detail.Consumption)
	}

	// Groups: lag, then a reset; a bad time changes nothing.
	var g struct {
		Lag int64 `json:"lag"`
	}
	e.get("/api/group?group=Billing", &g)
	if g.Lag != 1 {
		t.Fatalf("lag %d", g.Lag)
	}
	e.refused("/api/group/reset", console.ResetOffset{Group: "Billing", Topic: "Orders", Time: "tomorrow-ish"}, 400, "want start, end, now")
	e.refused("/api/group/reset", console.ResetOffset{Group: "Billing", Topic: "Nope", Time: "start"}, 404, "does not exist")
	e.refused("/api/group/reset", console.ResetOffset{Group: "Nobody", Topic: "Orders", Time: "start"}, 400, "has no offset")
	if off := e.n.Broker.Offsets().Query("Billing", "Orders", 0); off != 2 {
		t.Fatalf("offset %d after refused resets", off)
	}
	e.post("/api/group/reset", console.ResetOffset{Group: "Billing", Topic: "Orders", Time: "start"}, nil)
	e.get("/api/group?group=Billing", &g)
	if g.Lag != 3 {
		t.Fatalf("lag after reset %d", g.Lag)
	}
	var groups []console.GroupSummary
	e.get("/api/groups", &groups)
	found := false
	for _, gs := range groups {
		found = found || (gs.Name == "Billing" && gs.Lag == 3)
	}
	if !found {
		t.Fatalf("groups %+v", groups)
	}

	// Delete.
	e.refused("/api/topic/delete", map[string]string{"topic": "TBW102"}, 400, "system topic")
	e.post("/api/topic/delete", map[string]string{"topic": "Orders"}, nil)
	if _, ok := e.n.Broker.Topics().Get("Orders"); ok {
		t.Fatal("topic not deleted")
	}
}

// msgs0ID finds the id of the message with a key.
func msgs0ID(t *testing.T, e *env, key string) string {
	var msgs []console.Message
	e.get("/api/messages?topic=Orders&key="+key, &msgs)
	if len(msgs) != 1 {
		t.Fatalf("key %s: %+v", key, msgs)
	}
	return msgs[0].MsgID
}

func TestConsoleDeadLettersResend(t *testing.T) {
	e := newEnv(t, console.Config{})
	ctx := context.Background()
	for _, tp := range []string{"Pay", "%DLQ%Payers"} {
		if err := e.adm.CreateTopic(ctx, e.n.BrokerAddr, admin.TopicConfig{TopicName: tp, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.adm.SendMessage(ctx, e.n.BrokerAddr, "P", &record.Message{Topic: "%DLQ%Payers", Body: []byte("poison"),
		Properties: map[string]string{"RETRY_TOPIC": "Pay", "KEYS": "p-1", "UNIQ_KEY": "AB"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitQueue("%DLQ%Payers", 0, 1)
	var msgs []console.Message
	e.get("/api/dlq?group=Payers", &msgs)
	if len(msgs) != 1 || msgs[0].Body != "poison" {
		t.Fatalf("dlq %+v", msgs)
	}
	code, _ := e.do(http.MethodGet, "/api/dlq?group=Nobody", nil)
	if code != 404 {
		t.Fatalf("dlq of a group without one: %d", code)
	}
	var r map[string]string
	e.post("/api/dlq/resend", map[string]string{"msgId": res.MsgID}, &r)
	if r["topic"] != "Pay" {
		t.Fatalf("resend %v", r)
	}
	e.waitQueue("Pay", 0, 1)
	e.get("/api/messages?topic=Pay&key=p-1", &msgs)
	if len(msgs) != 1 || msgs[0].Body != "poison" {
		t.Fatalf("resent message %+v", msgs)
	}
	// A message that is not a dead letter is not resent.
	var pay []console.Message
	e.get("/api/messages?topic=Pay", &pay)
	e.refused("/api/dlq/resend", map[string]string{"msgId": pay[0].MsgID}, 400, "not a dead letter")
}

func TestConsoleRequiresAnACLAdmin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(`accounts:
  - accessKey: opsadmin
    secretKey: ops-secret-1
    admin: true
  - accessKey: appuser1
    secretKey: app-secret-1
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := acl.Open(acl.Config{File: path, Logger: consoletest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	e := newEnv(t, console.Config{ACL: v})
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"appuser1", "app-secret-1", 401}, {"opsadmin", "wrong", 401}, {"nobody00", "x", 401}, {"opsadmin", "ops-secret-1", 200}} {
		e.user, e.pass = c.user, c.pass
		if code, b := e.do(http.MethodGet, "/api/cluster", nil); code != c.want {
			t.Errorf("%s/%s: %d %s, want %d", c.user, c.pass, code, b, c.want)
		}
		if code, _ := e.do(http.MethodGet, "/", nil); code != c.want {
			t.Errorf("page as %s: %d, want %d", c.user, code, c.want)
		}
	}
}

// With the server's ACL on, the console works for an admin account: its
// requests are signed, so the broker accepts them.
func TestConsoleWithServerACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(`accounts:
  - accessKey: opsadmin
    secretKey: ops-secret-1
    admin: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, console.Config{}, server.Security{ACLEnable: true, ACLFile: path})
	if e.c == nil || e.n.Server.ACLValidator() == nil {
		t.Fatal("ACL not on")
	}
	if code, _ := e.do(http.MethodGet, "/api/cluster", nil); code != 401 {
		t.Fatalf("anonymous: %d", code)
	}
	e.user, e.pass = "opsadmin", "ops-secret-1"
	var brokers []console.Broker
	e.get("/api/cluster", &brokers)
	if len(brokers) != 1 || brokers[0].Error != "" {
		t.Fatalf("cluster through the ACL: %+v", brokers)
	}
	e.post("/api/topic", console.CreateTopic{Topic: "Secure", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, nil)
	e.post("/api/message", console.SendForm{Topic: "Secure", Keys: "s-1", Body: "secret"}, nil)
	e.waitQueue("Secure", 0, 1)
	var msgs []console.Message
	e.get("/api/messages?topic=Secure", &msgs)
	if len(msgs) != 1 || msgs[0].Body != "secret" {
		t.Fatalf("search through the ACL: %+v", msgs)
	}
}

func TestConsolePagesAreEmbedded(t *testing.T) {
	e := newEnv(t, console.Config{})
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		code, b := e.do(http.MethodGet, p, nil)
		if code != 200 || len(b) == 0 {
			t.Errorf("%s: %d", p, code)
		}
		if strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
			t.Errorf("%s loads something from the network", p)
		}
	}
}

// TestConsoleReplyTopicIsSystem: the cluster's request-reply topic, which
// the broker creates at start, is a system topic, not one to delete.
func TestConsoleReplyTopicIsSystem(t *testing.T) {
	e := newEnv(t, console.Config{})
	var topics []struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	e.get("/api/topics", &topics)
	for _, tp := range topics {
		if strings.HasSuffix(tp.Name, "_REPLY_TOPIC") {
			if tp.Kind != "system" {
				t.Fatalf("%s is listed as %s, want system", tp.Name, tp.Kind)
			}
			return
		}
	}
	t.Fatalf("no reply topic listed: %+v", topics)
}

// TestConsoleTopicTimers: the topic page counts the topic's pending
// timer messages, as the broker's timer service does (GET_TIMER_METRICS),
// and 0 for a topic without any.
func TestConsoleTopicTimers(t *testing.T) {
	e := newEnv(t, console.Config{})
	for _, name := range []string{"Later", "Now"} {
		e.post("/api/topic", console.CreateTopic{Topic: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, nil)
	}
	for range 2 {
		r := e.n.Broker.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "PG", Topic: "Later",
			Properties: "TIMER_DELAY_SEC\x013600", Body: []byte("b")})
		if r.Code != broker.Success {
			t.Fatalf("send: %+v", r)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.n.Broker.Timer().Pending()["Later"] < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("pending timers %v, want Later's 2", e.n.Broker.Timer().Pending())
		}
		// The timer service enqueues from its own goroutine and has no
		// completion signal: poll its visible count.
		time.Sleep(5 * time.Millisecond)
	}
	for topic, want := range map[string]int64{"Later": 2, "Now": 0} {
		var page struct {
			TimersPending *int64 `json:"timersPending"`
		}
		e.get("/api/topic?topic="+topic, &page)
		if page.TimersPending == nil || *page.TimersPending != want {
			t.Errorf("topic %s: timers pending %v, want %d", topic, page.TimersPending, want)
		}
	}
}
