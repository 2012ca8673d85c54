package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// mqadminRow is one row of the command table in docs/mqadmin.md.
type mqadminRow struct {
	command   string
	supported bool
	taken     []string // one-letter flags rocketstore takes
	notTaken  []string // mqadmin's flags it does not take
	example   string   // a full command line, or empty
}

// The documented addresses the examples use, which the test maps to
// its own server's.
const (
	docNamesrv = "127.0.0.1:9876"
	docBroker  = "127.0.0.1:10911"
)

var backticked = regexp.MustCompile("`([^`]*)`")

// readMqadminTable parses the command table of docs/mqadmin.md.
func readMqadminTable(t *testing.T) []mqadminRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/mqadmin.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []mqadminRow
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("docs/mqadmin.md:%d: %d cells, want 5: %s", i+1, len(cells), line)
		}
		ticks := func(s string) []string {
			var out []string
			for _, m := range backticked.FindAllStringSubmatch(s, -1) {
				out = append(out, m[1])
			}
			return out
		}
		r := mqadminRow{taken: ticks(cells[2]), notTaken: ticks(cells[3])}
		name := ticks(cells[0])
		if len(name) != 1 {
			t.Fatalf("docs/mqadmin.md:%d: want one command in the first cell: %s", i+1, line)
		}
		r.command = name[0]
		switch strings.TrimSpace(cells[1]) {
		case "yes":
			r.supported = true
		case "no":
		default:
			t.Fatalf("docs/mqadmin.md:%d: second cell %q is neither yes nor no", i+1, cells[1])
		}
		if ex := ticks(cells[4]); len(ex) == 1 {
			r.example = ex[0]
		} else if r.supported {
			t.Fatalf("docs/mqadmin.md:%d: a supported command needs one example: %s", i+1, line)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("docs/mqadmin.md has no command table")
	}
	return rows
}

// TestMqadminDocTable checks the table against the CLI: every admin
// command is a row marked yes with the flags it takes, and what the
// table says is not taken is refused.
func TestMqadminDocTable(t *testing.T) {
	rows := readMqadminTable(t)
	cmd := newAdminCmd()
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r.command] = true
		sub := subcommand(cmd, r.command)
		if r.supported != (sub != nil) {
			t.Errorf("%s: the table says supported=%t, the CLI has it: %t", r.command, r.supported, sub != nil)
			continue
		}
		if sub == nil {
			continue
		}
		for _, f := range r.taken {
			if sub.Flags().ShorthandLookup(strings.TrimPrefix(f, "-")) == nil {
				t.Errorf("%s: the table lists %s, the CLI does not take it", r.command, f)
			}
		}
		for _, f := range r.notTaken {
			if sub.Flags().ShorthandLookup(strings.TrimPrefix(f, "-")) != nil {
				t.Errorf("%s: the table says %s is not taken, the CLI takes it", r.command, f)
			}
		}
		if !strings.HasPrefix(r.example, "rocketstore admin ") || !strings.Contains(r.example, " "+r.command) {
			t.Errorf("%s: example %q is not a rocketstore admin %s command", r.command, r.example, r.command)
		}
	}
	for _, sub := range cmd.Commands() {
		if name := sub.Name(); !listed[name] && name != "cluster" && name != "help" && name != "completion" {
			t.Errorf("admin %s is not in docs/mqadmin.md", name)
		}
	}
}

// subcommand is the admin subcommand called name, or nil.
func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// TestMqadminDocExamples runs the table's examples in order against a
// server set up as the page says.
func TestMqadminDocExamples(t *testing.T) {
	n := adminNode(t)
	docClients(t, n.Addr)
	rewrite := strings.NewReplacer(docNamesrv, n.Addr, docBroker, n.BrokerAddr, msgIDHost(t, docBroker), msgIDHost(t, n.BrokerAddr))
	for _, r := range readMqadminTable(t) {
		if r.example == "" {
			continue
		}
		args := strings.Fields(rewrite.Replace(strings.TrimPrefix(r.example, "rocketstore ")))
		if len(args) < 2 || args[1] != "-n" {
			args = append([]string{"admin", "-n", n.Addr}, args[1:]...)
		}
		var out, errOut bytes.Buffer
		if code := execute(args, &out, &errOut); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", r.example, code, out.String(), errOut.String())
		}
		if r.command == "sendMessage" {
			// A send is acknowledged before its queue unit and index entry are written.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := n.Broker.Store().WaitDispatched(ctx, n.Broker.Store().CommitLog().MaxOffset())
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			docConsumed(t, n.Addr, n.BrokerAddr)
		}
	}
}

// docClients brings online what docs/mqadmin.md says is: a consumer of
// group Billing subscribed to Orders and a producer of OrderProducer.
func docClients(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	hb := remoting.NewRequest(remoting.CodeHeartBeat, []byte(`{"clientID":"127.0.0.1@doc","producerDataSet":[{"groupName":"OrderProducer"}],`+
		`"consumerDataSet":[{"groupName":"Billing","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",`+
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"Orders","subString":"*","subVersion":1}]}]}`))
	if resp, err := cl.Invoke(ctx, hb); err != nil || resp.Code != 0 {
		t.Fatalf("heartbeat %v %v", resp, err)
	}
}

// docConsumed commits what the page's Billing consumer does once the
// example message is sent: offset 1 on queue 0 of Orders.
func docConsumed(t *testing.T, namesrv, broker string) {
	t.Helper()
	c, err := admin.NewClient([]string{namesrv}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.UpdateConsumerOffset(context.Background(), broker, "Billing", "Orders", 0, 1); err != nil {
		t.Fatal(err)
	}
}

// msgIDHost is the first 16 hex digits of an offset message id: the
// broker's IPv4 address and port.
func msgIDHost(t *testing.T, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ToUpper(hex.EncodeToString(net.ParseIP(host).To4())) + fmt.Sprintf("%08X", p)
}
