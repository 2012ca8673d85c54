package acl

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

// sampleACL is RocketMQ 4.9's distribution plain_acl.yml.
const sampleACL = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
`

func TestParseRocketMQSample(t *testing.T) {
	f, r, err := parseAndCompile([]byte(sampleACL))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Accounts) != 2 || f.Accounts[0].SecretKey != "12345678" {
		t.Fatalf("accounts %v", f.Accounts)
	}
	a := r.accounts["RocketMQ"]
	if a == nil || a.defTopic != PermDeny || a.defGroup != PermSub || a.topics["topicB"] != PermPub|PermSub || a.groups["groupA"] != PermDeny {
		t.Fatalf("account RocketMQ compiled to %+v", a)
	}
	if !r.global[0].match(netip.MustParseAddr("10.10.103.7")) || r.global[0].match(netip.MustParseAddr("10.10.104.7")) {
		t.Fatal("10.10.103.* matched wrongly")
	}
	if !r.accounts["rocketmq2"].white.match(netip.MustParseAddr("192.168.1.200")) {
		t.Fatal("whiteRemoteAddress 192.168.1.* did not match 192.168.1.200")
	}
}

func TestParseErrorsNameTheEntry(t *testing.T) {
	acct := func(extra string) string {
		return "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n" + extra
	}
	for _, tc := range []struct{ yml, want string }{
		{"accounts: [", "yaml"},
		{"acounts: []", "acounts"},
		{acct("    topicPerms:\n      - topicA=ALL\n"), "accounts[0]: accessKey RocketMQ: topicPerms[0]"},
		{acct("    topicPerms:\n      - topicA\n"), "not name=PERM"},
		{acct("    defaultTopicPerm: PUBSUB\n"), "defaultTopicPerm"},
		{acct("    whiteRemoteAddress: 10.1.300.*\n"), "whiteRemoteAddress"},
		{"accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "longer than 6"},
		{"accounts:\n  - accessKey: RocketMQ\n    secretKey: 123\n", "secretKey must be longer"},
		{acct("") + "  - accessKey: RocketMQ\n    secretKey: 87654321\n", "appears twice"},
		{"globalWhiteRemoteAddresses:\n  - not-an-ip\n", "globalWhiteRemoteAddresses[0]"},
		{acct("    secretKey: [a]\n"), "secretKey"},
	} {
		_, err := ParseFile([]byte(tc.yml))
		if !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFile(%q) = %v, want ErrBadFile naming %q", tc.yml, err, tc.want)
		}
	}
}

func TestSecretNeverFormatted(t *testing.T) {
	f, err := ParseFile([]byte(sampleACL))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "account", f.Accounts[0], "file", f)
	for _, s := range []string{fmt.Sprint(f.Accounts[0]), fmt.Sprintf("%+v", f.Accounts[0]), fmt.Sprintf("%#v", f.Accounts[0]),
		fmt.Sprintf("%v", f), buf.String(), AccountUpdate{AccessKey: "RocketMQ", SecretKey: "12345678"}.String()} {
		if strings.Contains(s, "12345678") {
			t.Errorf("secret key printed: %s", s)
		}
	}
}

func TestAddrPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"", nil, []string{"127.0.0.1"}},
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"192.168.1.1", []string{"192.168.1.1", "::ffff:192.168.1.1"}, []string{"192.168.1.2"}},
		{"192.168.1.1,10.0.0.1", []string{"10.0.0.1"}, []string{"10.0.0.2"}},
		{"192.168.1.{1,2, 3}", []string{"192.168.1.3"}, []string{"192.168.1.4"}},
		{"192.168.*", []string{"192.168.9.9"}, []string{"192.169.0.0"}},
		{"192.168.1-10.*", []string{"192.168.10.255"}, []string{"192.168.11.0"}},
		{"10.10.103.1-100", []string{"10.10.103.100"}, []string{"10.10.103.101", "::1"}},
		{"::1", []string{"::1"}, []string{"127.0.0.1"}},
	} {
		m, err := parseAddrPattern(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		for _, a := range tc.yes {
			if !m.match(netip.MustParseAddr(a)) {
				t.Errorf("%q does not match %s", tc.pattern, a)
			}
		}
		for _, a := range tc.no {
			if m.match(netip.MustParseAddr(a)) {
				t.Errorf("%q matches %s", tc.pattern, a)
			}
		}
	}
	for _, bad := range []string{"1.2.3.256", "1.2.3.5-4", "1.2", "1.2.3", "fe80::*", "1.2.3.{a}", "x", "1.2.3.4.*"} {
		if _, err := parseAddrPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
