package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// TestDeleteOrderedWithRecords: on the store of records entries, sends
// to a topic race its deletion, six times over. Records carry the
// queue offsets they were built with, so every round built before the
// deletion is applied must be in the log before it: the leader holds its
// proposer's lock from the deletion's proposal to its apply. Then on every
// replica each of the topic's queues restarts at queue offset 0 after the
// deletion, holds its units in order (the record at each queue offset
// carries that offset), holds every send acknowledged after the deletion
// returned at its queue offset, and matches the other replicas unit for
// unit. In the broken variant, which proposes the deletion without the
// lock, a round built with the deleted topic's queue offsets commits after
// the deletion: its records are dispatched at queue offsets the new
// queues do not start at, and the replicas' dispatchers fail (a queue
// index holds another record's unit) or their queues do not restart at 0.
func TestDeleteOrderedWithRecords(t *testing.T) {
	t.Parallel()
	if err := deleteRacingSends(t, nil, 6); err != nil {
		t.Fatal(err)
	}
	t.Run("broken variant", func(t *testing.T) {
		// It stops at the first deletion out of order: more deletions
		// cost nothing when it is caught early, and keep a miss unlikely
		// on a host slow enough to change the odds (six went uncaught
		// once under the race detector in CI).
		err := deleteRacingSends(t, cluster.UnorderedRecordsDeletes, 20)
		if err == nil {
			t.Fatal("the deletions proposed without the proposer's lock left every queue in order: the test cannot tell")
		}
		t.Logf("broken variant caught: %v", err)
	})
}

// deleteRacingSends runs a group on the store of records entries in which
// topic Gone is deleted deletions times while four senders send to it,
// and returns the first replica that breaks the deletion's order.
func deleteRacingSends(t *testing.T, tune func(*cluster.NodeConfig), deletions int) error {
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		nc.Cluster.LogStore = cluster.LogStoreRecords
		if tune != nil {
			tune(nc)
		}
	})
	for i := range 10 {
		g.send("Gone", int32(i%2), fmt.Sprint("setup", i), "")
	}
	lb := g.nodes[g.leader()].Broker()
	// One deletion lets a round built before it commit after it about
	// three times in four in the broken variant (measured over 30 runs:
	// caught at the first deletion 22 times, the second 7, the third
	// once); six make a miss unlikely.
	for rep := range deletions {
		after, err := sendsAroundDelete(g, lb, rep)
		if err == nil {
			err = deletedInOrder(g, after)
		}
		if err != nil {
			// A replica whose dispatcher failed reports it again on
			// close: the error is this one.
			for i := range g.nodes {
				g.crash(i)
			}
			return fmt.Errorf("deletion %d: %w", rep+1, err)
		}
	}
	return nil
}

// faulty returns why a replica of g no longer applies or dispatches its
// log, or nil.
func faulty(g *group) error {
	for i, n := range g.nodes {
		if err := n.Err(); err != nil {
			return fmt.Errorf("%s stopped: %w", g.peers[i].ID, err)
		}
		if h := n.Broker().Store().Health(); h.DispatchFailing {
			return fmt.Errorf("%s's dispatcher fails: %w", g.peers[i].ID, h.Reason)
		}
	}
	return nil
}

// sendsAroundDelete deletes topic Gone on lb while four senders send to
// it: once 20 sends are acknowledged, until 20 more are after the deletion
// returned, or until a replica of g fails. It returns the sends
// acknowledged after the deletion returned.
func sendsAroundDelete(g *group, lb *broker.Broker, rep int) ([]ackedSend, error) {
	type sent struct {
		a     ackedSend
		after bool
	}
	var (
		mu      sync.Mutex
		deleted bool
		wg      sync.WaitGroup
	)
	acks := make(chan sent, 1024)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				after := deleted
				mu.Unlock()
				qid := int32((w + i) % 2)
				body := fmt.Sprintf("r%d-w%d-%d", rep, w, i)
				res := lb.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: "Gone",
					DefaultTopic: "TBW102", DefaultTopicQueueNums: 2, QueueID: qid, Body: []byte(body),
					BornTimestamp: 1700000000000, BornHost: netip.MustParseAddrPort("192.0.2.1:5555")})
				if res.Code != broker.Success {
					// A send racing the deletion may find the topic
					// gone before it is created again.
					continue
				}
				select {
				case acks <- sent{ackedSend{qid: qid, off: res.QueueOffset, body: body}, after}:
				case <-stop:
					return
				}
			}
		})
	}
	var out []ackedSend
	before := 0
	var err error
	timeout := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for phase := 0; phase < 2; {
		select {
		case <-tick.C:
			if err = faulty(g); err != nil {
				phase = 2
			}
		case s := <-acks:
			switch {
			case phase == 0:
				before++
				if before == 20 {
					if err = lb.DeleteTopic(context.Background(), "Gone"); err != nil {
						err = fmt.Errorf("delete topic Gone: %w", err)
						phase = 2
						break
					}
					mu.Lock()
					deleted = true
					mu.Unlock()
					phase = 1
				}
			case s.after:
				out = append(out, s.a)
				if len(out) == 20 {
					phase = 2
				}
			}
		case <-timeout:
			err = fmt.Errorf("deletion %d: %d sends acknowledged before it, %d after it within 30 s", rep+1, before, len(out))
			phase = 2
		}
	}
	close(stop)
	wg.Wait()
	return out, err
}

// deletedInOrder waits until every replica has applied and dispatched the
// same CommitLog prefix, then checks Gone's queues on each: they restart
// at 0, each unit's record carries its queue offset, the sends in after
// are at their offsets, and the replicas hold the same units.
func deletedInOrder(g *group, after []ackedSend) error {
	// Generous: CI runs the package beside others on 2 cores.
	deadline := time.Now().Add(30 * time.Second)
	var end int64
	for {
		if err := faulty(g); err != nil {
			return err
		}
		var offs []int64
		for _, n := range g.nodes {
			offs = append(offs, n.AppliedOffset())
		}
		if offs[0] == offs[1] && offs[1] == offs[2] {
			end = offs[0]
			break
		}
		if time.Now().After(deadline) {
			var raftState []string
			for i, n := range g.nodes {
				st := n.Raft().Stats()
				raftState = append(raftState, fmt.Sprintf("%s %s last log %s commit %s applied %s", g.peers[i].ID,
					st["state"], st["last_log_index"], st["commit_index"], st["applied_index"]))
			}
			return fmt.Errorf("replicas did not converge: applied offsets %v (%s)", offs, strings.Join(raftState, "; "))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var ref [2][]engine.MessageView
	for i, n := range g.nodes {
		st := n.Broker().Store()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := st.WaitDispatched(ctx, end)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: dispatch to %d: %w", g.peers[i].ID, end, err)
		}
		for qid := range int32(2) {
			units, err := queueUnits(st, "Gone", qid)
			if err != nil {
				return fmt.Errorf("%s: %w", g.peers[i].ID, err)
			}
			if i == 0 {
				ref[qid] = units
				continue
			}
			if len(units) != len(ref[qid]) {
				return fmt.Errorf("Gone/%d: %s has %d units, %s %d", qid, g.peers[i].ID, len(units), g.peers[0].ID, len(ref[qid]))
			}
			for k, u := range units {
				if u.CommitLogOffset != ref[qid][k].CommitLogOffset {
					return fmt.Errorf("Gone/%d unit %d: %s's is at CommitLog offset %d, %s's at %d", qid, k,
						g.peers[i].ID, u.CommitLogOffset, g.peers[0].ID, ref[qid][k].CommitLogOffset)
				}
			}
		}
		for _, a := range after {
			if err := holdsIn(st, "Gone", a); err != nil {
				return fmt.Errorf("%s: %w", g.peers[i].ID, err)
			}
		}
	}
	return nil
}

// queueUnits reads every unit of topic/qid, checking that the queue
// starts at offset 0 and that the record at each offset is the queue's and
// carries that offset.
func queueUnits(st *engine.Store, topic string, qid int32) ([]engine.MessageView, error) {
	if lo := st.MinOffsetInQueue(topic, qid); lo != 0 {
		return nil, fmt.Errorf("%s/%d starts at queue offset %d after the deletion, want 0", topic, qid, lo)
	}
	hi := st.MaxOffsetInQueue(topic, qid)
	var out []engine.MessageView
	for off := int64(0); off < hi; {
		res, err := st.GetMessage(topic, qid, off, 32, nil)
		if err != nil {
			return nil, fmt.Errorf("%s/%d offset %d: %w", topic, qid, off, err)
		}
		if len(res.Messages) == 0 {
			res.Release()
			return nil, fmt.Errorf("%s/%d offset %d of [0, %d): nothing read (status %v)", topic, qid, off, hi, res.Status)
		}
		for _, v := range res.Messages {
			m, err := record.Decode(v.Record, -1, false)
			if err == nil && (m.Topic != topic || m.QueueID != qid || m.QueueOffset != off) {
				err = fmt.Errorf("holds %s/%d's record of queue offset %d", m.Topic, m.QueueID, m.QueueOffset)
			}
			if err == nil && v.QueueOffset != off {
				err = fmt.Errorf("read as queue offset %d", v.QueueOffset)
			}
			if err != nil {
				res.Release()
				return nil, fmt.Errorf("%s/%d offset %d: %w", topic, qid, off, err)
			}
			out = append(out, engine.MessageView{CommitLogOffset: v.CommitLogOffset, QueueOffset: v.QueueOffset})
			off++
		}
		res.Release()
	}
	return out, nil
}

// holdsIn checks that st stores a at its queue offset of topic.
func holdsIn(st *engine.Store, topic string, a ackedSend) error {
	res, err := st.GetMessage(topic, a.qid, a.off, 1, nil)
	if err != nil {
		return fmt.Errorf("send %q acknowledged after the deletion, at %s/%d offset %d: %w", a.body, topic, a.qid, a.off, err)
	}
	defer res.Release()
	if len(res.Messages) == 0 {
		return fmt.Errorf("send %q acknowledged after the deletion, at %s/%d offset %d: not there (status %v)",
			a.body, topic, a.qid, a.off, res.Status)
	}
	m, err := record.Decode(res.Messages[0].Record, -1, true)
	if err != nil {
		return errors.Join(fmt.Errorf("%s/%d offset %d", topic, a.qid, a.off), err)
	}
	if string(m.Body) != a.body {
		return fmt.Errorf("%s/%d offset %d holds %q, the send acknowledged after the deletion was %q", topic, a.qid, a.off, m.Body, a.body)
	}
	return nil
}
