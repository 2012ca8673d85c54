package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// TestAdminClusterMembers: `admin cluster members` asks a member over its
// Raft port and prints the group, its leader and members as a table, or
// as one JSON document with --json; a port nothing listens on is an error.
func TestAdminClusterMembers(t *testing.T) {
	addr, _ := oneNodeGroupOnTCP(t)

	var out, errOut bytes.Buffer
	if code := execute([]string{"admin", "cluster", "members", "--raft", addr}, &out, &errOut); code != exitOK {
		t.Fatalf("members: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// The file size in binary units, as the rest of the command line
	// prints sizes (--json has the exact count).
	if !strings.Contains(out.String(), "brokerName broker-a, CommitLog file size 64.0 KiB)") || !strings.Contains(out.String(), "leader "+addr) {
		t.Fatalf("members header:\n%s", out.String())
	}
	// #NodeId #Raft address #Role #Term #Elections started/won #Applied index #Confirmed to leader
	// #Lag entries #Lag bytes #Last contact #Health
	if f := strings.Fields(lastLine(out.String())); len(f) != 11 || f[0] != "n1" || f[1] != addr || f[2] != "leader" ||
		f[3] == "0" || f[3] == "-" || f[4] != "1/1" || f[5] == "0" || f[5] == "-" || f[6] != "-" || f[7] != "0" || f[8] != "0" ||
		f[9] != "-" || f[10] != "ok" {
		t.Fatalf("members row %q:\n%s", f, out.String())
	}

	out.Reset()
	if code := execute([]string{"admin", "--json", "cluster", "members", "--raft", addr}, &out, &errOut); code != exitOK {
		t.Fatalf("members --json: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	var gi struct {
		cluster.GroupInfo
		MemberStatus []struct {
			NodeID string          `json:"nodeId"`
			Status *cluster.Status `json:"status"`
			Health string          `json:"health"`
		} `json:"memberStatus"`
	}
	if err := json.Unmarshal(out.Bytes(), &gi); err != nil {
		t.Fatalf("members --json: %v\n%s", err, out.String())
	}
	if gi.BrokerName != "broker-a" || gi.Leader != addr || len(gi.Members) != 1 || gi.Members[0].ID != "n1" ||
		len(gi.MemberStatus) != 1 || gi.MemberStatus[0].Status == nil || gi.MemberStatus[0].Status.State != "Leader" ||
		gi.MemberStatus[0].Health != "ok" {
		t.Fatalf("members --json: %+v\n%s", gi, out.String())
	}

	out.Reset()
	errOut.Reset()
	if code := execute([]string{"admin", "--timeout", "2s", "cluster", "members", "--raft", "127.0.0.1:1"}, &out, &errOut); code == exitOK {
		t.Fatalf("members of a port nothing listens on: exit 0\n%s", out.String())
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestAdminClusterTransferLeader: `admin cluster transfer-leader` refuses
// an empty --to before dialing, and reports the group's refusals (a
// non-member, the leader itself, no follower to pick) as failures; the
// transfer itself is the cluster package's TestTransferLeaderOverTCP.
func TestAdminClusterTransferLeader(t *testing.T) {
	addr, node := oneNodeGroupOnTCP(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--to", ""}, exitError, "--to names a member's raft.nodeId"},
		{[]string{"--to", "n9"}, exitFailed, "n9 is not a member of the group (members: n1)"},
		{[]string{"--to", "n1"}, exitFailed, "n1 leads already"},
		{nil, exitFailed, "transfer leadership"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"admin", "cluster", "transfer-leader", "--raft", addr}, c.args...)
		if code := execute(args, &out, &errOut); code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.want, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := execute([]string{"admin", "cluster", "transfer-leader", "--to", "n2"}, &out, &errOut); code == exitOK ||
		!strings.Contains(errOut.String(), `"raft" not set`) {
		t.Errorf("without --raft: exit %d\n%s", code, errOut.String())
	}
	if !node.Writable() {
		t.Error("the only member stopped leading")
	}
}

// TestAdminClusterTransferLeaderMoves: transfer-leader sent to a
// follower's Raft port moves the leadership of a group of three `serve`
// replicas to the named member and prints the leaders before and after.
func TestAdminClusterTransferLeaderMoves(t *testing.T) {
	rs := startGRPCGroup(t)
	l := leaderOf(t, rs)
	addrs := map[string]string{}
	for _, m := range l.cn.node.Info().Members {
		addrs[m.ID] = m.Addr
	}
	from := l.cn.node.Info().NodeID
	var followers []*grpcReplica
	for _, r := range rs {
		if r != l {
			followers = append(followers, r)
		}
	}
	via, to := addrs[followers[0].cn.node.Info().NodeID], followers[1]
	toID := to.cn.node.Info().NodeID
	var out, errOut bytes.Buffer
	if code := execute([]string{"admin", "cluster", "transfer-leader", "--raft", via, "--to", toID}, &out, &errOut); code != exitOK {
		t.Fatalf("transfer-leader: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	want := "leader was " + from + "@" + addrs[from] + ", is now " + toID + "@" + addrs[toID] + "\n"
	if out.String() != want {
		t.Fatalf("transfer-leader printed %q, want %q (stderr %q)", out.String(), want, errOut.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for !to.cn.node.Writable() {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept sends after the transfer", toID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oneNodeGroupOnTCP starts a one-node group on a loopback Raft port,
// closed when the test ends, and returns that port's address and the node.
func oneNodeGroupOnTCP(t *testing.T) (string, *cluster.Node) {
	t.Helper()
	tr, err := cluster.NewTCPTransport("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := string(tr.LocalAddr())
	node := oneNodeGroup(t, t.TempDir(), tr, addr)
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Error(err)
		}
	})
	return addr, node
}
