package proptest

import (
	"bytes"
	"fmt"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// verify checks the reopened store against the model and then makes the
// model what was recovered:
//   - P2: the CommitLog holds a prefix of the messages written, each
//     byte-identical at its offset, then at most the failed puts, in order;
//   - P1: no message acknowledged as flushed is missing; after a restart
//     or a kill, none at all is;
//   - P3: every queue holds exactly its recovered messages (checkQueues).
func (m *machine) verify(mode int) {
	recs := m.walkCommitLog()
	// Retention may have deleted the files below the CommitLog minimum.
	clMin := m.s.CommitLog().MinOffset()
	gone := 0
	for gone < len(m.md.log) && m.md.log[gone].off < clMin {
		if m.md.log[gone].off >= m.md.deletable {
			m.t.Fatalf("P1: the CommitLog starts at %d, but retention deleted nothing past %d: %v lost",
				clMin, m.md.deletable, m.md.log[gone])
		}
		gone++
	}
	kept := append([]*msg(nil), m.md.log[:gone]...)
	maybes := m.md.maybes
	for _, r := range recs {
		if len(kept) < len(m.md.log) {
			want := m.md.log[len(kept)]
			m.compareRecord(r, want)
			kept = append(kept, want)
			continue
		}
		if len(maybes) == 0 || !sameContent(r, maybes[0]) {
			m.t.Fatalf("P2: phantom record at %d (%s/%d #%d, %d-byte body) after the %d known messages",
				r.CommitLogOffset, r.Topic, r.QueueID, r.QueueOffset, len(r.Body), len(m.md.log))
		}
		mm := maybes[0]
		maybes = maybes[1:]
		mm.off, mm.size, mm.qoff, mm.ts = r.CommitLogOffset, int64(r.StoreSize), r.QueueOffset, r.StoreTimestamp
		kept = append(kept, mm)
	}
	for _, lost := range m.md.log[min(len(kept), len(m.md.log)):] {
		if lost.durable {
			m.t.Fatalf("P1: message acknowledged as flushed was lost: %v (recovered %d of %d messages, commitlog end %d; recovery %+v)",
				lost, len(kept), len(m.md.log), m.s.CommitLog().MaxOffset(), m.s.Recovery())
		}
		if mode != afterCrash {
			m.t.Fatalf("message lost although the page cache survived (mode %d): %v", mode, lost)
		}
	}
	m.md.log, m.md.maybes = kept, nil
	if mode == afterCrash {
		// All that recovery found came from the disk.
		for _, mm := range m.md.log {
			mm.durable = true
		}
		m.adoptGhosts()
	}
	m.checkQueues()
}

// adoptGhosts accepts, after a power cut on a disk that exposes freed
// blocks (crashsim's ReuseFreedBlocks), a queue that ends past its
// recovered messages with units no consumer can read: a page of the
// queue that never reached the disk came back holding a freed block of a
// deleted ConsumeQueue file, whose units point below the CommitLog
// minimum, where recovery cannot check them, and the records that the
// page really indexed were lost with the cut (so no replay conflicts with
// them; see engine's replayedUnitMatches for the case where they survive).
// Such a queue skips those offsets: nothing is lost (the records were not
// durable), hidden (the units point at deleted records, below the queue's
// minimum) or reused (later puts come after them). Allowed only when every
// message the queue had is below the CommitLog minimum (a unit above it is
// checked by recovery) and the engine's queue minimum is past the units.
// The model then counts them as ghosts.
func (m *machine) adoptGhosts() {
	if !m.st.fsOpts.ReuseFreedBlocks {
		return
	}
	clMin := m.s.CommitLog().MinOffset()
	for topic, ids := range m.s.Topics() {
		for _, id := range ids {
			k := queueKey{topic, id}
			want := m.md.queue(k)
			got := m.s.MaxOffsetInQueue(topic, id)
			if got <= int64(len(want)) || firstKept(want, clMin) != int64(len(want)) || m.s.MinOffsetInQueue(topic, id) != got {
				continue
			}
			if m.md.ghosts == nil {
				m.md.ghosts = map[queueKey][]int64{}
			}
			for off := int64(len(want)); off < got; off++ {
				m.md.ghosts[k] = append(m.md.ghosts[k], off)
			}
			m.stats.ghosts.Add(got - int64(len(want)))
		}
	}
}

// walkCommitLog decodes every record of the CommitLog files as the
// process sees them, independently of the engine's reader: from the first
// file, rolling to the next file at a BLANK record, to the first zero
// header. The walk must end exactly at the recovered end: a valid record
// past it is a stale record that recovery failed to zero.
func (m *machine) walkCommitLog() []*engine.MessageExt {
	cl := m.s.CommitLog()
	end, size := cl.MaxOffset(), cl.FileSize()
	files := m.fs.Files()
	var out []*engine.MessageExt
	off := cl.MinOffset()
	for {
		b := files[fmt.Sprintf("commitlog/%020d", off-off%size)]
		if b == nil {
			break
		}
		pos := off % size
		info, err := record.Check(b[pos:], off, true)
		if err != nil {
			break
		}
		if info.Blank {
			off += int64(info.Size)
			continue
		}
		out = append(out, info.Ext())
		off += int64(info.Size)
	}
	if off < end || (off > end && off%size != 0) || (off > end && len(out) > 0 && out[len(out)-1].CommitLogOffset >= end) {
		m.t.Fatalf("P2: the valid records end at %d, the store says its CommitLog ends at %d", off, end)
	}
	return out
}

func sameContent(r *engine.MessageExt, mm *msg) bool {
	return r.Topic == mm.topic && r.QueueID == mm.qid && bytes.Equal(r.Body, mm.body) && r.Tags() == mm.tags
}

func (m *machine) compareRecord(r *engine.MessageExt, want *msg) {
	if !sameContent(r, want) || r.CommitLogOffset != want.off || int64(r.StoreSize) != want.size ||
		r.QueueOffset != want.qoff || r.StoreTimestamp != want.ts {
		m.t.Fatalf("P2: record at %d is %s/%d #%d (%d bytes, ts %d), want %v ts %d",
			r.CommitLogOffset, r.Topic, r.QueueID, r.QueueOffset, r.StoreSize, r.StoreTimestamp, want, want.ts)
	}
}

// checkQueues is P3 against the model: each queue's units point at its
// messages, in order, with the right size and tags code; no unit past the
// end; every other queue is empty.
func (m *machine) checkQueues() {
	seen := m.md.queues()
	for topic, ids := range m.s.Topics() {
		for _, id := range ids {
			k := queueKey{topic, id}
			if !seen[k] && m.s.MaxOffsetInQueue(topic, id) != 0 {
				m.t.Fatalf("P3: queue %v holds %d units but no message of it was recovered", k, m.s.MaxOffsetInQueue(topic, id))
			}
		}
	}
	for k := range seen {
		want := m.md.queue(k)
		if got := m.s.MaxOffsetInQueue(k.topic, k.qid); got != int64(len(want)) {
			m.t.Fatalf("P3: queue %v max offset %d, want %d", k, got, len(want))
		}
		first := firstKept(want, m.s.CommitLog().MinOffset())
		if got := m.s.MinOffsetInQueue(k.topic, k.qid); got != first {
			m.t.Fatalf("P3: queue %v min offset %d, want %d", k, got, first)
		}
		for off := first; off < int64(len(want)); {
			n := m.getAndCompare(k, off, 32, want)
			off += int64(n)
		}
	}
}

// getAndCompare reads from a valid offset and checks what comes back; it
// returns how many messages came.
func (m *machine) getAndCompare(k queueKey, off int64, max int, want []*msg) int {
	res, err := m.s.GetMessage(k.topic, k.qid, off, max, nil)
	if err != nil {
		m.t.Fatalf("GetMessage %v@%d: %v", k, off, err)
	}
	defer res.Release()
	n := len(res.Messages)
	if res.Status != engine.Found || n == 0 || n > max || res.NextBeginOffset != off+int64(n) {
		m.t.Fatalf("P3: GetMessage %v@%d: %v with %d messages, next %d (queue holds %d)", k, off, res.Status, n, res.NextBeginOffset, len(want))
	}
	for i, v := range res.Messages {
		w := want[off+int64(i)]
		if v.QueueOffset != w.qoff || v.CommitLogOffset != w.off || int64(len(v.Record)) != w.size || v.TagsCode != w.tagsCode() {
			m.t.Fatalf("P3: unit %v#%d is (%d, %d bytes, tags %d), want %v", k, v.QueueOffset, v.CommitLogOffset, len(v.Record), v.TagsCode, w)
		}
		ext, err := record.Decode(v.Record, v.CommitLogOffset, true)
		if err != nil || !bytes.Equal(ext.Body, w.body) {
			m.t.Fatalf("P3: GetMessage %v#%d: record does not decode to the message written (%v)", k, v.QueueOffset, err)
		}
	}
	return n
}

// actGet reads a random queue from a random offset, including offsets
// just below, at and past its end, after dispatching what was written.
func (m *machine) actGet(t *rapid.T) {
	if m.md.failed {
		t.Skip("store failed; dispatch is stopped")
	}
	if !m.dispatch() || m.md.failed {
		return
	}
	k := m.drawQueue(t)
	want := m.md.queue(k)
	off := rapid.Int64Range(-1, int64(len(want))+2).Draw(t, "getOffset")
	max := rapid.IntRange(1, 8).Draw(t, "maxMsgNums")
	m.stats.gets.Add(1)
	first := firstKept(want, m.s.CommitLog().MinOffset())
	if off >= first && off < int64(len(want)) {
		m.getAndCompare(k, off, max, want)
		return
	}
	res, err := m.s.GetMessage(k.topic, k.qid, off, max, nil)
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	defer res.Release()
	n := int64(len(want))
	st, next := res.Status, res.NextBeginOffset
	ok := false
	switch {
	case n == 0:
		ok = st == engine.NoMatchedLogicQueue || st == engine.NoMessageInQueue
	case off < first:
		ok = st == engine.OffsetTooSmall && next == first
	case off == n:
		ok = st == engine.OffsetOverflowOne && next == n
	default:
		ok = st == engine.OffsetOverflowBadly && next == n
	}
	if !ok || len(res.Messages) != 0 {
		t.Fatalf("P3: GetMessage %v@%d of %d: %v next %d with %d messages", k, off, n, st, next, len(res.Messages))
	}
}

// checkCheckpoint is P5's first half: the checkpoint on the crashed disk
// never claims a CommitLog message newer than the last one recovered.
// logicsMsgTimestamp may be ahead (async flush dispatches and flushes
// ConsumeQueue units for CommitLog bytes not yet synced, as in RocketMQ);
// recovery starts from min(physic, logics), so physic is what must hold.
//
// A checkpoint recovery rejects as implausible (a timestamp negative or
// more than a day ahead of the clock, as engine.decodeCheckpoint checks)
// vouches for nothing: recovery then scans the whole CommitLog. Such a
// file is what a checkpoint page that never reached the disk can hold
// after a power cut on ext4 data=writeback (crashsim's freed-block reuse),
// e.g. a block of a removed rebuild marker's JSON.
func (m *machine) checkCheckpoint(cp checkpointTimes) {
	day := int64(24 * 3600 * 1000)
	if now := m.clock.Now().UnixMilli(); cp.physic < 0 || cp.logics < 0 || cp.physic > now+day || cp.logics > now+day {
		return
	}
	last := int64(0)
	for _, mm := range m.md.log {
		last = max(last, mm.ts)
	}
	if cp.physic > last {
		m.t.Fatalf("P5: checkpoint (physic %d, logics %d) is ahead of the last durable message (store time %d)",
			cp.physic, cp.logics, last)
	}
}
