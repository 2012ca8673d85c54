package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
)

// TestConcurrentSendsShareRounds: sends from many goroutines at once are
// proposed in shared rounds (multi entries), yet each gets its own result:
// its record is at the offsets it was given, an illegal message gets its
// own error without failing the others of its round, and a batch its own
// offsets. The replicas stay byte-identical, and a replica restarted after
// a snapshot replays the multi entries against the records it has.
func TestConcurrentSendsShareRounds(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	li := g.leader()
	l := g.nodes[li]
	f := (li + 1) % 3
	sendAll(t, l, "a")
	g.converge()
	if err := g.nodes[f].Snapshot(); err != nil {
		t.Fatal(err)
	}
	sendAll(t, l, "b")
	rounds, sends := l.RoundStats()
	if sends == 0 || rounds >= sends {
		t.Fatalf("%d sends in %d rounds: concurrent sends did not share rounds", sends, rounds)
	}
	t.Logf("%d sends in %d rounds", sends, rounds)
	for i, n := range g.nodes {
		if err := n.Err(); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	before := g.converge()
	g.sameFiles("commitlog", before)
	g.sameFiles("consumequeue", -1)
	g.stop(f)
	g.start(f)
	if end := g.converge(); end != before {
		t.Fatalf("applied offset %d after the restart, %d before", end, before)
	}
	if err := g.nodes[f].Err(); err != nil {
		t.Fatalf("restarted replica: %v", err)
	}
	g.sameFiles("commitlog", before)
}

// sendAll sends from 24 goroutines at once through the leader's Writer —
// single messages, batches of 3, and every 11th an illegal message (empty
// topic) — and checks each result against the stored records.
func sendAll(t *testing.T, l *cluster.Node, tag string) {
	t.Helper()
	const senders, each = 24, 12
	type sent struct {
		bodies  []string
		res     engine.PutResult
		err     error
		illegal bool
	}
	out := make([][]sent, senders)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				k := s*each + i
				sd := sent{illegal: k%11 == 5}
				n := 1
				if k%4 == 1 {
					n = 3
				}
				var msgs []*engine.Message
				for j := range n {
					body := fmt.Sprintf("%s-%d-%d-%d", tag, s, i, j)
					sd.bodies = append(sd.bodies, body)
					m := &engine.Message{Topic: "T", QueueID: int32(s % 4), Body: []byte(body),
						BornTimestamp: 1700000000000, BornHost: netip.MustParseAddrPort("192.0.2.1:5555")}
					if sd.illegal {
						m.Topic = ""
					}
					msgs = append(msgs, m)
				}
				if n == 1 {
					sd.res, sd.err = l.Put(context.Background(), msgs[0])
				} else {
					sd.res, sd.err = l.PutBatch(context.Background(), msgs)
				}
				out[s] = append(out[s], sd)
			}
		})
	}
	wg.Wait()
	st := l.Broker().Store()
	for s, list := range out {
		for _, sd := range list {
			if sd.illegal {
				if !errors.Is(sd.err, engine.ErrMessageIllegal) {
					t.Fatalf("illegal send %v: err %v, want ErrMessageIllegal", sd.bodies, sd.err)
				}
				continue
			}
			if sd.err != nil {
				t.Fatalf("send %v: %v", sd.bodies, sd.err)
			}
			if int(sd.res.MsgNum) != len(sd.bodies) || sd.res.QueueID != int32(s%4) {
				t.Fatalf("send %v: result %+v", sd.bodies, sd.res)
			}
			off := sd.res.WroteOffset
			for j, body := range sd.bodies {
				ext, err := st.LookMessageByOffset(off)
				if err != nil {
					t.Fatalf("send %v: record at %d: %v", sd.bodies, off, err)
				}
				if string(ext.Body) != body || ext.QueueOffset != sd.res.QueueOffset+int64(j) {
					t.Fatalf("send %v: record %d at %d holds %q at queue offset %d, want %q at %d",
						sd.bodies, j, off, ext.Body, ext.QueueOffset, body, sd.res.QueueOffset+int64(j))
				}
				off += int64(ext.StoreSize)
			}
		}
	}
}

// TestSendWithdrawnWhenContextEnds: a send that waits behind a round in
// flight returns its context's error when the context ends, and is never
// proposed; the broken variant, which keeps it queued, is caught.
func TestSendWithdrawnWhenContextEnds(t *testing.T) {
	t.Parallel()
	if err := withdrawnCase(t, false); err != nil {
		t.Fatal(err)
	}
	if err := withdrawnCase(t, true); err == nil {
		t.Fatal("broken variant (a send stays queued after its context ends) passed; the test cannot tell")
	} else {
		t.Logf("broken variant caught: %v", err)
	}
}

// withdrawnCase holds a round in flight on a leader whose followers are
// down (it cannot commit until it steps down, after LeaderLeaseTimeout),
// sends behind it with a context that ends well before that, and checks
// the send's error and that it was never proposed.
func withdrawnCase(t *testing.T, broken bool) error {
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		if broken {
			cluster.NoWithdraw(nc)
		}
	})
	li := g.leader()
	l := g.nodes[li]
	g.send("T", 0, "before", "")
	for i := range g.nodes {
		if i != li {
			g.stop(i)
		}
	}
	msg := func(body string) *engine.Message {
		return &engine.Message{Topic: "T", Body: []byte(body), BornTimestamp: 1700000000000,
			BornHost: netip.MustParseAddrPort("192.0.2.1:5555")}
	}
	rounds0, sends0 := l.RoundStats()
	first := make(chan error, 1)
	go func() {
		_, err := l.Put(context.Background(), msg("in flight"))
		first <- err
	}()
	for r, _ := l.RoundStats(); r == rounds0; r, _ = l.RoundStats() {
		time.Sleep(time.Millisecond) // until the first send's round is proposed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := l.Put(ctx, msg("withdrawn"))
	if ferr := <-first; ferr == nil {
		return errors.New("the round in flight committed without followers")
	}
	_, sends := l.RoundStats()
	switch {
	case !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("send behind the round: %v, want its context's deadline", err)
	case sends-sends0 != 1:
		return fmt.Errorf("%d sends proposed, want 1 (the withdrawn send proposed)", sends-sends0)
	}
	return nil
}
