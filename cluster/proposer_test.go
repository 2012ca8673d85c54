package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

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
