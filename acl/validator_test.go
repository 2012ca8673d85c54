package acl

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/remoting"
)

const testACL = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - topicP=PUB
    groupPerms:
      - groupA=DENY
  - accessKey: adminKey
    secretKey: admin-secret
    admin: true
  - accessKey: whitelisted
    secretKey: white-secret
    whiteRemoteAddress: 192.168.1.*
`

var (
	local  = netip.MustParseAddr("127.0.0.1")
	quiet  = slog.New(slog.NewTextHandler(io.Discard, nil))
	secret = map[string]string{"producer1": "producer-secret", "adminKey": "admin-secret", "whitelisted": "white-secret"}
)

func openTest(t *testing.T, content string, interval time.Duration) (*Validator, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(Config{File: path, ReloadInterval: interval, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v, path
}

func req(code int32, ext map[string]string, body string) *remoting.RemotingCommand {
	r := remoting.NewRequest(code, []byte(body))
	for k, v := range ext {
		r.ExtFields[k] = v
	}
	return r
}

func signed(ak string, code int32, ext map[string]string, body string) *remoting.RemotingCommand {
	r := req(code, ext, body)
	SignRequest(r, ak, secret[ak], "")
	return r
}

func send(topic string) map[string]string {
	return map[string]string{"a": "pg", "b": topic, "e": "0"}
}

func pull(topic, group string) map[string]string {
	return map[string]string{"topic": topic, "consumerGroup": group, "queueId": "0", "queueOffset": "0"}
}

func wantReason(t *testing.T, d *Denial, reason string) {
	t.Helper()
	switch {
	case reason == "" && d != nil:
		t.Fatalf("denied (%s): %s", d.Reason, d.Remark)
	case reason != "" && d == nil:
		t.Fatalf("allowed, want denial %s", reason)
	case reason != "" && d.Reason != reason:
		t.Fatalf("denial %s (%s), want %s", d.Reason, d.Remark, reason)
	}
}

func TestCheckPermissions(t *testing.T) {
	v, _ := openTest(t, testACL, time.Hour)
	for _, tc := range []struct {
		name   string
		r      *remoting.RemotingCommand
		remote string
		reason string
		remark string
	}{
		{"unsigned", req(remoting.CodeSendMessageV2, send("topicB"), "x"), "", ReasonUnsigned, "no AccessKey"},
		{"route query needs no key", req(remoting.CodeGetRouteInfoByTopic, map[string]string{"topic": "topicA"}, ""), "", "", ""},
		{"unknown key", req(remoting.CodeSendMessageV2, map[string]string{"AccessKey": "nobody1", "Signature": "x"}, ""), "", ReasonUnknownKey, "nobody1"},
		{"PUB|SUB topic send", signed("producer1", remoting.CodeSendMessageV2, send("topicB"), "x"), "", "", ""},
		{"PUB topic batch send", signed("producer1", remoting.CodeSendBatchMessage, send("topicP"), "x"), "", "", ""},
		{"V2 code with a V1 header is checked on the V1 topic", signed("producer1", remoting.CodeSendMessageV2,
			map[string]string{"b": "topicB", "topic": "topicA"}, "x"), "", ReasonNoPermission, "topic topicA"},
		{"v1 send", signed("producer1", remoting.CodeSendMessage, map[string]string{"topic": "topicP"}, "x"), "", "", ""},
		{"DENY topic send", signed("producer1", remoting.CodeSendMessageV2, send("topicA"), "x"), "", ReasonNoPermission, "no PUB permission on topic topicA"},
		{"SUB topic send", signed("producer1", remoting.CodeSendMessageV2, send("topicC"), "x"), "", ReasonNoPermission, "topicC"},
		{"default DENY topic send", signed("producer1", remoting.CodeSendBatchMessage, send("other"), "x"), "", ReasonNoPermission, "topic other"},
		{"SUB topic pull", signed("producer1", remoting.CodePullMessage, pull("topicC", "g1"), ""), "", "", ""},
		{"PUB-only topic pull", signed("producer1", remoting.CodePullMessage, pull("topicP", "g1"), ""), "", ReasonNoPermission, "no SUB permission on topic topicP"},
		{"DENY group pull", signed("producer1", remoting.CodePullMessage, pull("topicC", "groupA"), ""), "", ReasonNoPermission, "group groupA"},
		{"retry topic pull is the group's", signed("producer1", remoting.CodePullMessage, pull("%RETRY%groupA", "g1"), ""), "", ReasonNoPermission, "group groupA"},
		{"offset update", signed("producer1", remoting.CodeUpdateConsumerOffset, pull("topicA", "g1"), ""), "", ReasonNoPermission, "topic topicA"},
		{"offset query", signed("producer1", remoting.CodeQueryConsumerOffset, pull("topicC", "g1"), ""), "", "", ""},
		{"max offset", signed("producer1", remoting.CodeGetMaxOffset, map[string]string{"topic": "topicA", "queueId": "0"}, ""), "", ReasonNoPermission, "topicA"},
		{"send back to a DENY group", signed("producer1", remoting.CodeConsumerSendMsgBack, map[string]string{"group": "groupA", "originTopic": "topicC"}, ""), "", ReasonNoPermission, "group groupA"},
		{"send to a DLQ is the group's", signed("producer1", remoting.CodeSendMessageV2, send("%DLQ%groupA"), ""), "", ReasonNoPermission, "group groupA"},
		{"heartbeat", signed("producer1", remoting.CodeHeartBeat, nil,
			`{"clientID":"c","consumerDataSet":[{"groupName":"g1","subscriptionDataSet":[{"topic":"topicC"},{"topic":"%RETRY%g1"}]}]}`), "", "", ""},
		{"heartbeat subscribing a DENY topic", signed("producer1", remoting.CodeHeartBeat, nil,
			`{"clientID":"c","consumerDataSet":[{"groupName":"g1","subscriptionDataSet":[{"topic":"topicA"}]}]}`), "", ReasonNoPermission, "topicA"},
		{"bad heartbeat body", signed("producer1", remoting.CodeHeartBeat, nil, `{`), "", ReasonBadRequest, "heartbeat"},
		{"lock a DENY topic", signed("producer1", remoting.CodeLockBatchMQ, nil,
			`{"consumerGroup":"g1","clientId":"c","mqSet":[{"topic":"topicA","brokerName":"b","queueId":0}]}`), "", ReasonNoPermission, "topicA"},
		{"admin code by non-admin", signed("producer1", remoting.CodeUpdateAndCreateTopic, map[string]string{"topic": "topicB"}, ""), "", ReasonNotAdmin, "code 17 needs an admin"},
		{"ACL update by non-admin", signed("producer1", CodeUpdateAndCreateACLConfig, map[string]string{"accessKey": "producer1", "secretKey": "x", "admin": "true"}, ""), "", ReasonNotAdmin, "admin"},
		{"admin code by admin", signed("adminKey", remoting.CodeDeleteTopicInBroker, map[string]string{"topic": "topicB"}, ""), "", "", ""},
		{"admin without rules may do anything", signed("adminKey", remoting.CodePullMessage, pull("anything", "any"), ""), "", "", ""},
		{"global white address needs no key", req(remoting.CodeDeleteTopicInBroker, nil, ""), "10.10.103.9", "", ""},
		{"account white address needs no signature", req(remoting.CodeSendMessageV2, map[string]string{"AccessKey": "whitelisted", "b": "t"}, ""), "192.168.1.7", "", ""},
		{"account white address elsewhere needs one", req(remoting.CodeSendMessageV2, map[string]string{"AccessKey": "whitelisted", "b": "t"}, ""), "", ReasonBadSignature, "whitelisted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote := local
			if tc.remote != "" {
				remote = netip.MustParseAddr(tc.remote)
			}
			d := v.Check(tc.r, remote)
			wantReason(t, d, tc.reason)
			if d != nil && !strings.Contains(d.Remark, tc.remark) {
				t.Fatalf("remark %q does not name %q", d.Remark, tc.remark)
			}
			if d != nil && strings.Contains(d.Remark, "secret") {
				t.Fatalf("remark %q mentions a secret", d.Remark)
			}
		})
	}
}

// TestForgedAndReplayedSignatures alters a validly signed request in
// every way an attacker who saw it could, and expects each to be refused
// with bad_signature; replaying it unchanged passes, which is the weakness
// of RocketMQ's scheme that docs/security.md states.
func TestForgedAndReplayedSignatures(t *testing.T) {
	v, _ := openTest(t, testACL, time.Hour)
	orig := signed("producer1", remoting.CodeSendMessageV2, send("topicB"), "pay 10 EUR")
	wantReason(t, v.Check(orig, local), "")
	alter := map[string]func(r *remoting.RemotingCommand){
		"topic":            func(r *remoting.RemotingCommand) { r.ExtFields["b"] = "topicP" },
		"queue":            func(r *remoting.RemotingCommand) { r.ExtFields["e"] = "1" },
		"body":             func(r *remoting.RemotingCommand) { r.Body = []byte("pay 99 EUR") },
		"body truncated":   func(r *remoting.RemotingCommand) { r.Body = r.Body[:3] },
		"field added":      func(r *remoting.RemotingCommand) { r.ExtFields["i"] = "DELAY\x011" },
		"field removed":    func(r *remoting.RemotingCommand) { delete(r.ExtFields, "e") },
		"signature edited": func(r *remoting.RemotingCommand) { r.ExtFields[FieldSignature] = "A" + r.ExtFields[FieldSignature][1:] },
		"signature gone":   func(r *remoting.RemotingCommand) { delete(r.ExtFields, FieldSignature) },
		"other account":    func(r *remoting.RemotingCommand) { r.ExtFields[FieldAccessKey] = "adminKey" },
		"token added":      func(r *remoting.RemotingCommand) { r.ExtFields[FieldSecurityToken] = "t" },
		// Moving bytes between fields keeps the concatenation: this is
		// the one alteration RocketMQ's content (values without keys)
		// cannot see; it is refused here only because e's value changes.
		"values shifted": func(r *remoting.RemotingCommand) { r.ExtFields["a"], r.ExtFields["b"] = "pgt", "opicB" },
	}
	for name, f := range alter {
		t.Run(name, func(t *testing.T) {
			r := orig.Clone()
			r.Body = append([]byte(nil), orig.Body...)
			f(r)
			d := v.Check(r, local)
			if name == "values shifted" {
				// a="pg",b="topicB" and a="pgt",b="opicB" concatenate alike.
				wantReason(t, d, ReasonNoPermission)
				return
			}
			wantReason(t, d, ReasonBadSignature)
		})
	}
	t.Run("identical replay is accepted (no nonce or timestamp)", func(t *testing.T) {
		wantReason(t, v.Check(orig.Clone(), local), "")
	})
}

func TestReloadAtomicAndBrokenEditKeepsRules(t *testing.T) {
	reloads := make(chan error, 64)
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(testACL), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(Config{File: path, ReloadInterval: 5 * time.Millisecond, Logger: quiet,
		OnReload: func(err error) { reloads <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var reloadErrs []error
	next := func() error {
		t.Helper()
		select {
		case err := <-reloads:
			reloadErrs = append(reloadErrs, err)
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("no reload within 5 s; outcomes so far %v", reloadErrs)
			return nil
		}
	}
	r := signed("producer1", remoting.CodeSendMessageV2, send("topicA"), "")
	wantReason(t, v.Check(r, local), ReasonNoPermission)

	// The watcher picks up an edit that grants topicA. os.WriteFile
	// truncates first: a poll may catch the empty file, which is refused
	// (the rules stay) before the complete one is applied.
	if err := os.WriteFile(path, []byte(strings.Replace(testACL, "topicA=DENY", "topicA=PUB", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for next() != nil {
		wantReason(t, v.Check(r, local), ReasonNoPermission)
	}
	wantReason(t, v.Check(r, local), "")

	// A broken edit (replaced whole, so no empty file shows) is rejected
	// and topicA stays granted.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Replace(testACL, "topicA=DENY", "topicA=MAYBE", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := next(); !errors.Is(err, ErrBadFile) {
		t.Fatalf("reload of a broken edit: %v, want ErrBadFile; outcomes %v", err, reloadErrs)
	}
	wantReason(t, v.Check(r, local), "")
	_ = v.Close()
	if len(reloads) != 0 {
		t.Fatalf("reloads after the broken edit was reported: %v", <-reloads)
	}
}

// TestReloadFollowsTheClock: the watcher polls on the injected clock, so
// an edit is applied once that clock has moved two reload intervals (one
// to see the change, one to see it stable), however long the test runs.
func TestReloadFollowsTheClock(t *testing.T) {
	reloads := make(chan error, 64)
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(testACL), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClock()
	v, err := Open(Config{File: path, ReloadInterval: time.Hour, Clock: clock, Logger: quiet,
		OnReload: func(err error) { reloads <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	r := signed("producer1", remoting.CodeSendMessageV2, send("topicA"), "")
	edit := filepath.Join(t.TempDir(), "edit.yml")
	if err := os.WriteFile(edit, []byte(strings.Replace(testACL, "topicA=DENY", "topicA=PUB", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(edit, path); err != nil {
		t.Fatal(err)
	}
	wantReason(t, v.Check(r, local), ReasonNoPermission)
	// A fake ticker drops a tick the watcher has not taken yet: the
	// clock moves an interval at a time until the reload is reported.
	// On the wall clock's hourly ticker the edit would not be seen.
	for i := 0; ; i++ {
		clock.Advance(time.Hour)
		select {
		case err := <-reloads:
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			wantReason(t, v.Check(r, local), "")
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 500 {
			t.Fatal("no reload after 500 intervals of the injected clock")
		}
	}
}

func TestEmptyFileKeepsRules(t *testing.T) {
	v, path := openTest(t, testACL, time.Hour)
	_ = os.WriteFile(path, []byte("\n  \n"), 0o600)
	if changed, err := v.Reload(); changed || !errors.Is(err, ErrBadFile) {
		t.Fatalf("empty file: changed %v, err %v", changed, err)
	}
	wantReason(t, v.Check(signed("producer1", remoting.CodeSendMessageV2, send("topicB"), ""), local), "")
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(Config{File: filepath.Join(t.TempDir(), "missing.yml"), Logger: quiet}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	_ = os.WriteFile(path, []byte("accounts: {"), 0o600)
	if _, err := Open(Config{File: path, Logger: quiet}); !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), path) {
		t.Fatalf("broken file: %v", err)
	}
}

func TestAdminUpdatesRewriteTheFile(t *testing.T) {
	v, path := openTest(t, testACL, time.Hour)
	white := ""
	pub := "PUB"
	if err := v.UpdateAccount(AccountUpdate{AccessKey: "newUser1", SecretKey: "new-secret", WhiteRemoteAddress: &white,
		DefaultTopicPerm: &pub, TopicPerms: []string{"topicZ=DENY"}, SetTopicPerms: true}); err != nil {
		t.Fatal(err)
	}
	secret["newUser1"] = "new-secret"
	wantReason(t, v.Check(signed("newUser1", remoting.CodeSendMessageV2, send("anyTopic"), ""), local), "")
	wantReason(t, v.Check(signed("newUser1", remoting.CodeSendMessageV2, send("topicZ"), ""), local), ReasonNoPermission)
	data, _ := os.ReadFile(path)
	f, err := ParseFile(data)
	if err != nil || len(f.Accounts) != 4 || f.DataVersion[0].Counter != 1 {
		t.Fatalf("file after update: %v %+v", err, f)
	}
	// The rewritten file is what a fresh Validator loads.
	v2, err := Open(Config{File: path, Logger: quiet, ReloadInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, v2.Check(signed("newUser1", remoting.CodeSendMessageV2, send("anyTopic"), ""), local), "")
	_ = v2.Close()

	if err := v.UpdateAccount(AccountUpdate{AccessKey: "newUser1", SecretKey: "short"}); err == nil {
		t.Fatal("a 5-character secret was accepted")
	}
	if err := v.DeleteAccount("newUser1"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, v.Check(signed("newUser1", remoting.CodeSendMessageV2, send("anyTopic"), ""), local), ReasonUnknownKey)
	if err := v.DeleteAccount("newUser1"); !errors.Is(err, ErrNoAccount) {
		t.Fatalf("deleting twice: %v", err)
	}
	if err := v.UpdateGlobalWhiteAddrs([]string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	wantReason(t, v.Check(req(remoting.CodeDeleteTopicInBroker, nil, ""), local), "")
	if err := v.UpdateGlobalWhiteAddrs([]string{"bad"}); err == nil {
		t.Fatal("a bad address was written")
	}
	f, dv, err := v.Snapshot()
	if err != nil || dv.Counter != 3 {
		t.Fatalf("snapshot: %v, version %+v", err, dv)
	}
	for _, a := range f.Accounts {
		if a.SecretKey != "******" {
			t.Fatalf("snapshot shows a secret for %s", a.AccessKey)
		}
	}
	// A broken file on disk is never overwritten by an update.
	_ = os.WriteFile(path, []byte("accounts: ["), 0o600)
	if err := v.DeleteAccount("producer1"); err == nil {
		t.Fatal("update over a broken file succeeded")
	}
	if data, _ := os.ReadFile(path); string(data) != "accounts: [" {
		t.Fatalf("broken file overwritten: %q", data)
	}
}
