package cluster

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
)

// Group commit for the Raft log. hashicorp/raft writes and fsyncs the
// leader's log in its main loop, one write per batch of Apply calls it
// finds queued, and the same loop handles the commits that followers'
// acknowledgements bring. Concurrent sends proposed one entry each end up
// in several small batches, each an fsync that the next commit waits
// behind (measured with 16 concurrent senders: about 3 entries per leader
// fsync, the main loop busy ~80 % of the time). So the leader keeps one
// entry of sends in flight: the sends that arrive while it replicates
// wait, and the next round carries all of them as one multi entry
// (kindMulti) — one log write on each replica, one AppendEntries, one
// apply — with each send's own result. This is a database's group
// commit, with the Raft round as the commit.
//
// There is no proposer goroutine: the first send that finds no round in
// flight proposes (it "leads" the round); when its round is applied it
// hands out the results and passes the lead to the oldest waiting send,
// which proposes everything waiting by then.

// proposeWindow is how many rounds may be in flight at once. Measured on
// the bench (3 replicas on one disk, 16 and 64 producers), one carried 2–3
// times the sends per entry of two and was as fast or faster: a second
// round overlaps the followers' fsync of the first but competes with it
// for the disk and for the Raft main loop.
const proposeWindow = 1

// maxRejoinYields bounds the yields of a round's lead while fewer sends
// wait than the last round carried (leadRound).
const maxRejoinYields = 8

// maxRoundBytes bounds a multi entry: the sends past it wait for the next
// round (a single send larger than it still goes alone).
const maxRoundBytes = 1 << 20

// proposal is one send waiting to be replicated.
type proposal struct {
	data []byte // its put entry; STORETIMESTAMP is set when it is proposed
	// kind and msgs are the send (a store of replicated records builds
	// its records from them; records.go).
	kind byte
	msgs []*engine.Message
	res  engine.PutResult
	err  error
	// lead is set, before wake, on a waiting send that must propose.
	lead bool
	// wake is signalled once: the result is set, or lead.
	wake chan struct{}
}

// proposals is the leader's queue of sends.
type proposals struct {
	mu       sync.Mutex
	inflight int // rounds being led, or handed to a waiting send to lead
	waiting  []*proposal
	// rounds and sends count the rounds proposed and the sends they
	// carried (tests read them through RoundStats).
	rounds, sends int64
	// lastRound is the number of sends the last round carried.
	lastRound int
}

// propose replicates a put entry and waits until it is committed and
// applied here, sharing its round with the sends proposed meanwhile. A
// send whose ctx ends while it waits for a round is withdrawn, never
// stored, and returns ctx's error; once proposed, it waits for its round,
// which ends when the entry is applied or Raft fails it.
func (n *Node) propose(ctx context.Context, kind byte, msgs []*engine.Message) (engine.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return engine.PutResult{}, err
	}
	if !n.writable.Load() {
		return engine.PutResult{}, ErrNotLeader
	}
	p := &proposal{data: encodePut(kind, &putEntry{origin: engineops.Origin{StoreHost: n.cfg.StoreHost}, msgs: msgs}),
		kind: kind, msgs: msgs, wake: make(chan struct{}, 1)}
	q := &n.props
	q.mu.Lock()
	if q.inflight < proposeWindow {
		q.inflight++
		q.mu.Unlock()
		n.leadRound(p)
		return p.res, p.err
	}
	q.waiting = append(q.waiting, p)
	q.mu.Unlock()
	select {
	case <-p.wake:
	case <-ctx.Done():
		if n.withdraw(p) {
			return engine.PutResult{}, fmt.Errorf("cluster: send withdrawn before it was proposed: %w", ctx.Err())
		}
		// It is in a round already, or has been handed the lead: its
		// fate is the round's, and the sends behind it need it to lead.
		<-p.wake
	}
	if p.lead {
		n.leadRound(p)
	}
	return p.res, p.err
}

// withdraw takes p out of the waiting sends, and reports whether it was
// still there: a send whose caller gave up before it was proposed is never
// stored.
func (n *Node) withdraw(p *proposal) bool {
	if n.cfg.noWithdraw {
		return false
	}
	q := &n.props
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, p)
	if i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	return true
}

// leadRound proposes p and the sends waiting behind it, hands out their
// results and passes the lead on (or frees the slot).
func (n *Node) leadRound(p *proposal) {
	q := &n.props
	// Sends woken together (the results of one round) come back
	// together: yield so that those already runnable join this round
	// instead of waiting a whole round for the next. Closed-loop
	// producers come back as many as the last round carried, so the
	// lead yields again (a few times at most, no timer) while fewer are
	// here: with 16 producers a round carried 12.3–13.0 sends with one
	// yield and 13.1–13.7 with these (BENCHMARKS.md, replicated sends).
	runtime.Gosched()
	q.mu.Lock()
	for i := 0; i < maxRejoinYields && len(q.waiting)+1 < q.lastRound; i++ {
		q.mu.Unlock()
		runtime.Gosched()
		q.mu.Lock()
	}
	round := []*proposal{p}
	size := len(p.data)
	i := 0
	for ; i < len(q.waiting) && size+len(q.waiting[i].data) <= maxRoundBytes; i++ {
		size += len(q.waiting[i].data)
	}
	round = append(round, q.waiting[:i]...)
	q.waiting = append(q.waiting[:0:0], q.waiting[i:]...)
	q.rounds++
	q.sends += int64(len(round))
	q.lastRound = len(round)
	q.mu.Unlock()

	n.replicateRound(round)

	q.mu.Lock()
	var next *proposal
	if len(q.waiting) > 0 {
		next = q.waiting[0]
		q.waiting = q.waiting[1:]
		next.lead = true
	} else {
		q.inflight--
	}
	q.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	for _, o := range round[1:] {
		o.wake <- struct{}{}
	}
}

// replicateRound proposes the round's sends as one entry (a single send
// as its own put entry) and sets each send's result.
func (n *Node) replicateRound(round []*proposal) {
	if n.records() {
		n.replicateRecords(round)
		return
	}
	n.proposeMu.Lock()
	ts := max(n.now(), n.lastAssigned)
	n.lastAssigned = ts
	for _, p := range round {
		putTimestamp(p.data, ts)
	}
	data := round[0].data
	if len(round) > 1 {
		data = encodeMulti(round)
	}
	fut := n.raft.Apply(data, n.ccfg.ApplyTimeout)
	n.proposeMu.Unlock()
	setAll := func(err error) {
		for _, p := range round {
			p.err = err
		}
	}
	if err := n.await(fut); err != nil {
		setAll(raftError(err))
		return
	}
	switch r := fut.Response().(type) {
	case *applyResult:
		if len(round) == 1 || r.err != nil {
			setAll(r.err)
			round[0].res = r.res
			return
		}
	case []applyResult:
		if len(r) == len(round) {
			for i, p := range round {
				p.res, p.err = r[i].res, r[i].err
			}
			return
		}
		setAll(fmt.Errorf("cluster: %d results applied for %d sends", len(r), len(round)))
		return
	}
	setAll(fmt.Errorf("cluster: unexpected apply response %T for %d sends", fut.Response(), len(round)))
}

// RoundStats returns how many rounds this node proposed as leader and how
// many sends they carried.
func (n *Node) RoundStats() (rounds, sends int64) {
	n.props.mu.Lock()
	defer n.props.mu.Unlock()
	return n.props.rounds, n.props.sends
}

// await returns fut's error, or raft.ErrRaftShutdown once the node's Raft
// has shut down: Raft abandons the futures still queued when it shuts
// down (in its buffered apply channel, or committed and waiting for the
// state machine), and a send must not wait for them forever. The
// goroutine that waits for an abandoned future stays blocked.
func (n *Node) await(fut raft.ApplyFuture) error {
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.down:
		select {
		case err := <-done:
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}
