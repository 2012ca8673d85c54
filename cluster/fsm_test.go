package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
)

// TestReplicasByteIdentical sends through the leader (single, batch,
// delayed; enough to roll CommitLog files) and checks that the three
// replicas' CommitLogs and ConsumeQueues are byte-identical.
func TestReplicasByteIdentical(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	for i := range 300 {
		g.send(fmt.Sprintf("T%d", i%3), int32(i%4), strings.Repeat("x", (i*7)%900)+fmt.Sprint(i), "TAGS\x01a\x02KEYS\x01k"+fmt.Sprint(i))
	}
	l := g.nodes[g.leader()].Broker()
	delayed := l.Store().MaxOffsetInQueue("T0", 1) + 1
	g.send("T0", 1, "later", "DELAY\x012")
	// The delayed message is written to T0/1 when it is due; compare
	// the files after that, not while it replicates.
	waitFor(t, "the delayed message", func() bool { return l.Store().MaxOffsetInQueue("T0", 1) == delayed })
	batch := []byte{}
	for i := range 5 {
		batch = append(batch, encodeBatchMessage(fmt.Sprintf("b%d", i))...)
	}
	res := l.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: "T1", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 2, Batch: true, Body: batch})
	if res.Code != broker.Success || res.MsgNum != 5 {
		t.Fatalf("batch: %+v", res)
	}
	end := g.converge()
	if end < 2*testFileSize {
		t.Fatalf("only %d bytes written; the test should roll files", end)
	}
	g.sameFiles("commitlog", end)
	g.sameFiles("consumequeue", -1)
	for _, n := range g.nodes {
		if got := n.Broker().Store().MaxOffsetInQueue("T1", 2); got != 25+5 {
			t.Fatalf("T1/2 max offset %d on a replica, want 30", got)
		}
	}
}

// TestFollowerRefusesSends: a follower answers SERVICE_NOT_AVAILABLE and
// writes nothing.
func TestFollowerRefusesSends(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	l := g.leader()
	f := g.nodes[(l+1)%3]
	res := f.Broker().SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: "T",
		DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, Body: []byte("x")})
	if res.Code != broker.ServiceNotAvailable {
		t.Fatalf("follower send: %v %s", res.Code, res.Remark)
	}
	if _, err := f.Put(context.Background(), &engine.Message{Topic: "T", Body: []byte("x")}); err == nil {
		t.Fatal("follower Put succeeded")
	}
	// The broker id follows a leadership change asynchronously (the node's
	// leader-observer goroutine), so wait for it rather than race it.
	// A follower's id is its 1-based place in peers whoever leads, as
	// docs/cluster.md says: with n1 leading, clusterList shows 0, 2, 3.
	waitFor(t, "leader brokerId 0, follower its place in peers", func() bool {
		return f.BrokerID() == int64((l+1)%3+1) && g.nodes[l].BrokerID() == 0
	})
}

// TestLeaderChange stops the leader, sends through the new one, restarts
// the old leader and checks that all three agree again, with consumer
// offsets replicated.
func TestLeaderChange(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	for i := range 50 {
		g.send("T", int32(i%2), fmt.Sprint("a", i), "")
	}
	l := g.leader()
	if code, _ := g.nodes[l].Broker().UpdateConsumerOffset("c", "cg", "T", 0, 17); code != broker.Success {
		t.Fatal(code)
	}
	g.converge()
	for _, n := range g.nodes {
		waitFor(t, "consumer offset on every replica", func() bool { return n.Broker().Offsets().Query("cg", "T", 0) == 17 })
	}
	g.stop(l)
	nl := g.leader()
	if nl == l {
		t.Fatal("the stopped node leads")
	}
	if got := g.nodes[nl].Broker().Offsets().Query("cg", "T", 0); got != 17 {
		t.Fatalf("consumer offset on the new leader: %d, want 17", got)
	}
	for i := range 50 {
		g.send("T", int32(i%2), fmt.Sprint("b", i), "")
	}
	g.start(l)
	end := g.converge()
	g.sameFiles("commitlog", end)
	g.sameFiles("consumequeue", -1)
	for _, n := range g.nodes {
		if got := n.Broker().Store().MaxOffsetInQueue("T", 0); got != 50 {
			t.Fatalf("T/0 max offset %d, want 50", got)
		}
	}
}

// waitFor waits until cond holds, as long as converge does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10*time.Second + raftMaxBackoff)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// encodeBatchMessage is one message of a SEND_BATCH_MESSAGE body.
func encodeBatchMessage(body string) []byte {
	props := ""
	total := 20 + len(body) + 2 + len(props)
	b := make([]byte, 0, total)
	be := func(v uint32) { b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	be(uint32(total))
	be(0)
	be(0)
	be(0)
	be(uint32(len(body)))
	b = append(b, body...)
	b = append(b, byte(len(props)>>8), byte(len(props)))
	return append(b, props...)
}
