package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// TestClusterServeConsole: serve of a replica with --console serves the
// console, whose replication page reads the group over the Raft port:
// the one member leads, is healthy and reports its term.
func TestClusterServeConsole(t *testing.T) {
	raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	consoleAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	rc := &raftFileConfig{NodeID: "n1", Bind: raftAddr, Peers: []string{"n1@" + raftAddr},
		HeartbeatTimeoutMs: 200, ElectionTimeoutMs: 200}
	nc := server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000}}}
	log := slog.New(slog.DiscardHandler)
	nc.Server.Logger, nc.Broker.Store.Logger = log, log
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runClusterServe(ctx, nc, rc, clusterGRPC{}, nil, "", consoleAddr, 10*time.Second, log) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// The console answers once serve has started and Raft, on its own
	// timers, has elected the member: poll its page, with a deadline.
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		resp, err := http.Get("http://" + consoleAddr + "/api/replication")
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		var r console.Replication
		if json.Unmarshal(b, &r) != nil || !r.Enabled || len(r.Members) != 1 {
			continue
		}
		m := r.Members[0]
		if m.Role == "leader" && m.Health == "ok" && m.Status != nil && m.Status.Term >= 1 && r.Leader == raftAddr {
			return
		}
	}
	t.Fatalf("the console's replication page never showed n1 leading: %s", last)
}
