package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/server"
)

func TestServeConfigRaftSection(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
		peers           int
	}{
		{"replica", `brokerName: broker-a
listenPort: 10911
namesrvAddr: 127.0.0.1:9876;127.0.0.1:9877
raft:
  nodeId: n2
  bind: 127.0.0.1:7002
  peers: [n1@127.0.0.1:7001, n2@127.0.0.1:7002, n3@127.0.0.1:7003]
`, "", 3},
		{"no raft", "brokerName: broker-a\n", "", -1},
		{"unknown raft key", "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peer: [n1@127.0.0.1:1]\n", "peer", 0},
		{"unknown broker key", "brokerNam: x\nraft:\n  nodeId: n1\n", "brokerNam", 0},
		{"node not in peers", "raft:\n  nodeId: n9\n  bind: 127.0.0.1:1\n  peers: [n1@127.0.0.1:1]\n", "not in peers", 0},
		{"bad peer", "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peers: [n1-127.0.0.1:1]\n", "nodeId@host:port", 0},
		{"no bind", "raft:\n  nodeId: n1\n  peers: [n1@127.0.0.1:1]\n", "bind", 0},
		{"bad log store", "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peers: [n1@127.0.0.1:1]\n  logStore: bolt\n", `logStore "bolt"`, 0},
		{"negative scrub", "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peers: [n1@127.0.0.1:1]\n  scrubIntervalMs: -5\n", "scrubIntervalMs -5", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(name, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			fc, rc, err := loadServeConfig(name)
			if err == nil && rc != nil {
				_, _, err = rc.clusterConfig()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fc == nil || (rc == nil) != (tc.peers < 0) {
				t.Fatalf("fc %v rc %v", fc, rc)
			}
			if rc != nil {
				c, adv, _ := rc.clusterConfig()
				if len(c.Peers) != tc.peers || adv != "127.0.0.1:7002" || c.NodeID != "n2" {
					t.Fatalf("cluster config %+v, advertise %s", c, adv)
				}
			}
		})
	}
}

func TestServeConfigRaftTuning(t *testing.T) {
	name := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peers: [n1@127.0.0.1:1]\n" +
		"  snapshotThreshold: 200\n  snapshotIntervalMs: 2000\n  trailingLogs: 50\n  scrubIntervalMs: 500\n  scrubBytes: 65536\n" +
		"  logStore: raftlog\n"
	if err := os.WriteFile(name, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rc, err := loadServeConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := rc.clusterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.SnapshotThreshold != 200 || c.SnapshotInterval != 2*time.Second || c.TrailingLogs != 50 ||
		c.ScrubInterval != 500*time.Millisecond || c.ScrubBytes != 65536 || c.LogStore != cluster.LogStoreRaftLog {
		t.Fatalf("cluster config %+v", c)
	}
	if err := os.WriteFile(name, []byte(strings.Replace(yaml, "logStore: raftlog", "logStore: records", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, rc, err = loadServeConfig(name); err != nil {
		t.Fatal(err)
	}
	if c, _, err = rc.clusterConfig(); err != nil || c.LogStore != cluster.LogStoreRecords {
		t.Fatalf("logStore: records gives %q, %v", c.LogStore, err)
	}
}

// TestServeConfigRaftTimeouts: the raft: section's timeouts reach the
// cluster config, and a lease longer than the heartbeat timeout, or an
// election timeout shorter than it, is refused naming both.
func TestServeConfigRaftTimeouts(t *testing.T) {
	load := func(extra string) (cluster.Config, error) {
		t.Helper()
		name := filepath.Join(t.TempDir(), "c.yaml")
		yaml := "raft:\n  nodeId: n1\n  bind: 127.0.0.1:1\n  peers: [n1@127.0.0.1:1]\n" + extra
		if err := os.WriteFile(name, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, rc, err := loadServeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := rc.clusterConfig()
		if err != nil {
			t.Fatal(err)
		}
		_, c.Transport = raft.NewInmemTransport("")
		return c, c.Validate()
	}
	c, err := load("  heartbeatTimeoutMs: 3000\n  electionTimeoutMs: 4000\n  leaderLeaseTimeoutMs: 2500\n  commitTimeoutMs: 20\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.HeartbeatTimeout != 3*time.Second || c.ElectionTimeout != 4*time.Second ||
		c.LeaderLeaseTimeout != 2500*time.Millisecond || c.CommitTimeout != 20*time.Millisecond {
		t.Fatalf("cluster config %+v", c)
	}
	if _, err := load(""); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	// A heartbeat timeout raised alone: the election timeout follows.
	if _, err := load("  heartbeatTimeoutMs: 5000\n"); err != nil {
		t.Fatalf("heartbeatTimeoutMs alone: %v", err)
	}
	for extra, want := range map[string]string{
		"  leaderLeaseTimeoutMs: 2500\n":                          "leader lease timeout 2.5s is longer than the heartbeat timeout 2s",
		"  heartbeatTimeoutMs: 3000\n  electionTimeoutMs: 1000\n": "election timeout 1s is shorter than the heartbeat timeout 3s",
	} {
		if _, err := load(extra); !errors.Is(err, cluster.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want ErrConfig with %q", extra, err, want)
		}
	}
}

// TestServeConfigRaftGRPC: a replica serves gRPC at its
// raft.grpcEndpoints entry, or at an explicit --grpc-listen only when the
// entries are there (routes must name the leader's); bad entries are
// errors naming them.
func TestServeConfigRaftGRPC(t *testing.T) {
	eps := []string{"n1@127.0.0.1:8081", "n2@127.0.0.1:8082"}
	for _, tt := range []struct {
		name     string
		entries  []string
		addr     string
		explicit bool
		want     string
		err      string
	}{
		{"default: the node's entry", eps, defaultGRPCListen, false, "127.0.0.1:8081", ""},
		{"explicit address", eps, "0.0.0.0:9000", true, "0.0.0.0:9000", ""},
		{"turned off", eps, "", false, "", ""},
		{"no entries: off by default", nil, defaultGRPCListen, false, "", ""},
		{"no entries: explicit is an error", nil, "127.0.0.1:9000", true, "", "needs raft.grpcEndpoints"},
		{"node not listed", eps[1:], defaultGRPCListen, false, "", ""},
		{"bad entry", []string{"n1:127.0.0.1:8081"}, defaultGRPCListen, false, "", `"n1:127.0.0.1:8081" is not nodeId@ip:port`},
		{"duplicate", []string{eps[0], eps[0]}, defaultGRPCListen, false, "", "listed twice"},
	} {
		rc := &raftFileConfig{NodeID: "n1", GRPCEndpoints: tt.entries}
		got, _, err := rc.grpcListen(tt.addr, tt.explicit)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: listen %q, err %v; want %q, err containing %q", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// TestClusterDemoConfigIsSmall: the files cluster-demo writes give each
// replica the small footprint (64 MiB CommitLog files, 4.2 MB index
// files, 16 MiB Raft log segments) and pass serve's checks.
func TestClusterDemoConfigIsSmall(t *testing.T) {
	name := filepath.Join(t.TempDir(), "n1.yaml")
	if err := os.WriteFile(name, []byte(demoConfig(1, 9876)), 0o644); err != nil {
		t.Fatal(err)
	}
	fc, rc, err := loadServeConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	c, _, err := rc.clusterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if nc.Broker.Store.CommitLogFileSize != 64<<20 || nc.Broker.Index.MaxHashSlotNum != 50000 ||
		nc.Broker.Index.MaxIndexNum != 200000 || c.LogSegmentSize != 16<<20 || nc.Listen != "127.0.0.1:9876" {
		t.Fatalf("store %+v, index %+v, raft log segment %d, listen %s", nc.Broker.Store, nc.Broker.Index, c.LogSegmentSize, nc.Listen)
	}
}

// TestClusterDemoPortsFollowPort: every port of cluster-demo's replicas
// derives from --port, the broker ports too (RocketMQ's 10911, 10921,
// 10931 beside 9876), so that two demos, or a demo and a test, run side
// by side on different --port values.
func TestClusterDemoPortsFollowPort(t *testing.T) {
	for _, c := range []struct{ port, broker1 int }{{9876, 10911}, {20000, 21035}} {
		for i := 1; i <= 3; i++ {
			conf := demoConfig(i, c.port)
			want := fmt.Sprintf("listenPort: %d\n", c.broker1+10*(i-1))
			if !strings.Contains(conf, want) {
				t.Errorf("--port %d, n%d: config lacks %q:\n%s", c.port, i, want, conf)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"cluster-demo", "--port", "64000", "--dir", t.TempDir()}, &out, &errOut); code != exitError ||
		!strings.Contains(errOut.String(), "within 1-65535") {
		t.Errorf("--port 64000: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
