package pop

import (
	"math"
	"slices"
	"sync"
)

// queueKey names one group's pop view of one queue.
type queueKey struct {
	group, topic string
	queueID      int32
}

// entry is a message of a queue that a group has not finished with: in
// flight (delivered, not acked) or, in a FIFO receive, held back behind
// an earlier message of its message group. Offsets below a queue's
// position without an entry are done: acked, moved to the DLQ, or
// filtered out.
type entry struct {
	// attempt is the delivery attempt of the current delivery (0: held,
	// never delivered).
	attempt int32
	// deadline is when the delivery's invisible time ends (ms).
	deadline int64
	// ck is the revive-queue offset of the record that made the current
	// delivery or last changed its invisible time.
	ck       int64
	msgGroup string
}

func (e entry) held() bool { return e.attempt == 0 }

// queueState is the in-flight state of one queueKey. Its lock is held
// across the write of each record that changes it, so that the revive
// log orders a queue's records as they were applied.
type queueState struct {
	mu  sync.Mutex
	key queueKey
	// pos is the next offset pop reads (-1: pop has not started).
	pos     int64
	entries entryTable
	// dueFrom bounds the deadlines from below, so that a receive whose
	// time is before it skips the scan of the entries for due ones.
	// Invariant: every entry that is not held has deadline >= dueFrom.
	// apply lowers it as deadlines enter; a scan raises it to the exact
	// minimum.
	dueFrom int64
}

func newQueueState(k queueKey) *queueState {
	return &queueState{key: k, pos: -1, dueFrom: math.MaxInt64}
}

// dueBy reports whether an entry that is not held may be due at now
// (false: none is).
func (q *queueState) dueBy(now int64) bool { return now >= q.dueFrom }

// apply changes the state by one record written at revive-queue offset
// at. Replay and the live path both use it, so that a recovered state
// is the state the records describe; it is idempotent.
func (q *queueState) apply(r *logRecord, at int64) {
	switch r.op {
	case opCheckpoint:
		for _, it := range r.items {
			e := entry{attempt: it.attempt, msgGroup: it.msgGroup}
			if it.attempt > 0 {
				e.deadline, e.ck = it.deadline, at
				q.dueFrom = min(q.dueFrom, it.deadline)
			}
			q.entries.set(it.offset, e)
		}
		if r.end > q.pos {
			q.pos = r.end
		}
	case opAck, opDeadLetter:
		for _, it := range r.items {
			if q.current(it.offset, it.ck) {
				q.entries.del(it.offset)
			}
		}
	case opSnapshot:
		// The queue's whole state when the snapshot was written.
		q.entries.reset()
		q.dueFrom = math.MaxInt64
		for _, it := range r.items {
			q.entries.set(it.offset, entry{attempt: it.attempt, deadline: it.deadline, ck: it.ck, msgGroup: it.msgGroup})
			if it.attempt > 0 {
				q.dueFrom = min(q.dueFrom, it.deadline)
			}
		}
		q.pos = r.end
	case opChange:
		for _, it := range r.items {
			if q.current(it.offset, it.ck) {
				e, _ := q.entries.get(it.offset)
				e.deadline, e.ck = it.deadline, at
				q.entries.set(it.offset, e)
				q.dueFrom = min(q.dueFrom, it.deadline)
			}
		}
	}
}

// current reports whether the message at off is in flight in the
// delivery ck names.
func (q *queueState) current(off, ck int64) bool {
	e, ok := q.entries.get(off)
	return ok && !e.held() && e.ck == ck
}

// sortedOffsets returns the offsets of the entries in queue order.
func (q *queueState) sortedOffsets() []int64 {
	offs := make([]int64, 0, q.entries.len())
	for o := range q.entries.all() {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	return offs
}

// heldCount is the number of held entries.
func (q *queueState) heldCount() int {
	n := 0
	for _, e := range q.entries.all() {
		if e.held() {
			n++
		}
	}
	return n
}

// snapshot returns a record holding the queue's whole state.
func (q *queueState) snapshot(now int64) *logRecord {
	r := &logRecord{op: opSnapshot, group: q.key.group, topic: q.key.topic, queueID: q.key.queueID, popTime: now,
		start: q.pos, end: q.pos, items: make([]logItem, 0, q.entries.len())}
	for _, off := range q.sortedOffsets() {
		e, _ := q.entries.get(off)
		r.items = append(r.items, logItem{offset: off, attempt: e.attempt, deadline: e.deadline, ck: e.ck, msgGroup: e.msgGroup})
	}
	return r
}
