package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/server"
)

func TestMetricsAddrDefaultsToLoopback(t *testing.T) {
	for in, want := range map[string]string{":9100": "127.0.0.1:9100", "9100": "127.0.0.1:9100",
		"0.0.0.0:9100": "0.0.0.0:9100", "192.0.2.1:9100": "192.0.2.1:9100", "[::1]:9100": "[::1]:9100"} {
		if got := loopbackDefault(in); got != want {
			t.Errorf("loopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
	if !isLoopback(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}) || isLoopback(&net.TCPAddr{IP: net.IPv4zero}) {
		t.Error("isLoopback wrong")
	}
}

// aclNode starts a node with ACL on, its accounts given by the plain_acl.yml
// text yml; it stops with the test.
func aclNode(t *testing.T, yml string) *server.Node {
	t.Helper()
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := server.StartNode(server.NodeConfig{Dir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0",
		Server: server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Security: server.Security{ACLEnable: true, ACLFile: aclFile, ACLReloadInterval: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// TestConsoleUsesServeACL: with aclEnable, serve's console asks for an ACL
// admin account.
func TestConsoleUsesServeACL(t *testing.T) {
	n := aclNode(t, "accounts:\n  - accessKey: adminAK1\n    secretKey: admin-SK-1\n    admin: true\n  - accessKey: userAK12\n    secretKey: user-SK-12\n")
	var logs bytes.Buffer
	stop, err := withConsole("127.0.0.1:0")(context.Background(), n, server.NodeConfig{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`url=(http://[0-9.:]+/)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no console url in %q", logs.String())
	}
	get := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, m[1], nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"adminAK1", "wrong", 401}, {"userAK12", "user-SK-12", 401}, {"adminAK1", "admin-SK-1", 200}} {
		if got := get(tc.user, tc.pass); got != tc.want {
			t.Errorf("console as %q: HTTP %d, want %d", tc.user, got, tc.want)
		}
	}
}

// TestAdminCLISignsWithACL: `rocketstore admin` signs with --accessKey and
// $ROCKETMQ_SECRET_KEY; without them an ACL server refuses it.
func TestAdminCLISignsWithACL(t *testing.T) {
	n := aclNode(t, "accounts:\n  - accessKey: adminAK1\n    secretKey: admin-SK-1\n    admin: true\n")
	t.Setenv("ROCKETMQ_ACCESS_KEY", "")
	t.Setenv("ROCKETMQ_SECRET_KEY", "")
	fails(t, n.Addr, "no AccessKey", "updateTopic", "-b", n.BrokerAddr, "-t", "AclTopic")
	t.Setenv("ROCKETMQ_SECRET_KEY", "admin-SK-1")
	ok(t, n.Addr, "--accessKey", "adminAK1", "updateTopic", "-b", n.BrokerAddr, "-t", "AclTopic")
	if _, found := n.Broker.Topics().Get("AclTopic"); !found {
		t.Fatal("the signed updateTopic did not create the topic")
	}
}
