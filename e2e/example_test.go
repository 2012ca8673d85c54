package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
)

// The README's example program works against the server.
func TestExampleProgram(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the example")
	}
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	bin := filepath.Join(t.TempDir(), "example")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./example").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// Messages an earlier run left unconsumed, with the same tag and the
	// same keys: the example must not count them as its own.
	for i := range 10 {
		res := n.Broker.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "ExampleProducer", Topic: "ExampleTopic",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, Body: []byte(fmt.Sprintf("stale %d", i)),
			Properties: string(record.AppendProperties(nil, map[string]string{"TAGS": "greeting", "KEYS": fmt.Sprintf("order-%d", i)}))})
		if res.Code != broker.Success {
			t.Fatalf("stale send: %v %s", res.Code, res.Remark)
		}
	}
	out, err := exec.CommandContext(ctx, bin, "-namesrv", n.Addr).CombinedOutput()
	before, _, found := strings.Cut(string(out), "all messages received")
	if err != nil || !found {
		t.Fatalf("example: %v\n%s", err, out)
	}
	for i := range 10 {
		if !strings.Contains(before, fmt.Sprintf("received %q", fmt.Sprintf("hello %d", i))) {
			t.Fatalf("the example finished before receiving its own message %d:\n%s", i, out)
		}
	}
	t.Logf("%s", out)
}
