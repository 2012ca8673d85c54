package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
)

// oneNodeGroup opens a one-node replicated group on dir over tr (whose
// address is addr), waits for it to lead, and closes it at the end of the
// test unless the caller closes it first.
func oneNodeGroup(t *testing.T, dir string, tr raft.Transport, addr string) *cluster.Node {
	t.Helper()
	node, err := cluster.Open(cluster.NodeConfig{Dir: dir, BrokerName: "broker-a",
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: 64 << 10, FlushDiskType: engine.SyncFlush},
			Index: index.Config{MaxHashSlotNum: 16, MaxIndexNum: 32}},
		Cluster: cluster.Config{NodeID: "n1", Peers: []cluster.Peer{{ID: "n1", Addr: addr}}, Transport: tr,
			HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
			LeaderLeaseTimeout: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	// Raft elects on its own timers and the node exports no event for
	// becoming writable: poll, with a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for !node.Writable() {
		if time.Now().After(deadline) {
			_ = node.Close()
			t.Fatal("no leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return node
}

// replicaStore writes messages through a one-node replicated group on
// an in-memory transport and returns its stopped store directory.
func replicaStore(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	_, tr := raft.NewInmemTransport("10.0.0.1:7000")
	node := oneNodeGroup(t, dir, tr, "10.0.0.1:7000")
	defer func() {
		if err := node.Close(); err != nil {
			t.Error(err)
		}
	}()
	for i := range n {
		res := node.Broker().SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: "T",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: int32(i % 4), Body: []byte(strings.Repeat("x", 200) + fmt.Sprint(i))})
		if res.Code != broker.Success {
			t.Fatalf("send: %v %s", res.Code, res.Remark)
		}
	}
	return dir
}

// TestRepairCommand: `rocketstore repair --from DIR` rewrites the records
// whose bits were flipped in a copy of a replica's store, after which
// `rocketstore verify` is clean and the CommitLog is byte-identical to
// the source; a store of another group is refused with exit status 1.
func TestRepairCommand(t *testing.T) {
	src := replicaStore(t, 100)
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	file := filepath.Join(dst, "commitlog", "00000000000000000000")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{5000, 9000, 20000} {
		b[off] ^= 0x40
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"verify", "--dir", dst}, &out, &errOut); code != exitFailed {
		t.Fatalf("verify of the damaged copy: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := execute([]string{"repair", "--dir", dst, "--from", src}, &out, &errOut); code != exitOK {
		t.Fatalf("repair: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), "repaired\n"); n != 3 {
		t.Fatalf("repair output: %d records repaired, want 3\n%s", n, out.String())
	}
	out.Reset()
	if code := execute([]string{"verify", "--dir", dst}, &out, &errOut); code != exitOK {
		t.Fatalf("verify after the repair: exit %d\n%s", code, out.String())
	}
	a, _ := os.ReadFile(filepath.Join(src, "commitlog", "00000000000000000000"))
	c, _ := os.ReadFile(file)
	if !bytes.Equal(a, c) {
		t.Fatal("the repaired CommitLog differs from the source's")
	}

	other := replicaStore(t, 1)
	errOut.Reset()
	if code := execute([]string{"repair", "--dir", dst, "--from", other}, &out, &errOut); code != exitFailed ||
		!strings.Contains(errOut.String(), "not a replica of the same group") {
		t.Fatalf("repair from another group: exit %d: %s", code, errOut.String())
	}
}
