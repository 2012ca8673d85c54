package pop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// AllQueues in ReceiveRequest.QueueID receives from every queue of the
// topic.
const AllQueues int32 = -1

// ReceiveRequest is one receive (RocketMQ's PopMessageRequestHeader).
type ReceiveRequest struct {
	Group, Topic string
	// QueueID is the queue, or AllQueues.
	QueueID int32
	// Filter selects messages (nil: all); filtered-out messages are done
	// for the group.
	Filter record.MessageFilter
	// Max is the most messages returned (>= 1).
	Max int
	// InvisibleTime is how long the messages stay invisible (>= 1 ms).
	InvisibleTime time.Duration
	// FIFO delivers each message group (property __SHARDINGKEY) in
	// queue order: a message is not delivered while an earlier message
	// of its group in the queue is in flight.
	FIFO bool
	// PollTime is how long a receive that finds no message waits for
	// one (long polling; 0: it returns at once). It waits for an arrival
	// on the topic (Config.Arrivals) or for the end of the invisible time
	// of one of the group's in-flight messages, then tries again.
	PollTime time.Duration
}

// Message is one delivered message.
type Message struct {
	// MessageExt is the stored message (a copy), with ReconsumeTimes set
	// to Attempt - 1.
	*record.MessageExt
	// Handle acks the message or changes its invisible time.
	Handle Handle
	// Attempt is the delivery attempt, from 1.
	Attempt int32
	// handle is Handle's text, made with the whole batch's (see
	// ReceiptHandle); empty in a Message that Receive did not make.
	handle string
}

// ReceiptHandle returns the text of the message's Handle as Receive made
// it (Handle.String): the receipt handle to give the client. Receive
// writes the handles of a batch together, in one allocation, since they
// share all but their last two fields.
func (m *Message) ReceiptHandle() string {
	if m.handle == "" {
		return m.Handle.String()
	}
	return m.handle
}

func (r *ReceiveRequest) check() error {
	switch {
	case r.Group == "" || r.Topic == "":
		return fmt.Errorf("%w: group %q and topic %q must be set", ErrBadRequest, r.Group, r.Topic)
	case r.Max < 1:
		return fmt.Errorf("%w: max messages %d < 1", ErrBadRequest, r.Max)
	case r.InvisibleTime < time.Millisecond:
		return fmt.Errorf("%w: invisible time %v < 1ms", ErrBadRequest, r.InvisibleTime)
	case r.QueueID < AllQueues:
		return fmt.Errorf("%w: queue id %d", ErrBadRequest, r.QueueID)
	}
	return nil
}

// Receive delivers up to req.Max messages: first those whose invisible
// time ended without an ack (their attempt counted), then new ones. The
// checkpoint of the batch is written (durable under SYNC_FLUSH) before
// Receive returns. With req.PollTime it waits that long for a message
// (long polling); an empty result means none came.
func (s *Service) Receive(ctx context.Context, req ReceiveRequest) ([]Message, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	if req.PollTime <= 0 || s.cfg.Arrivals == nil {
		return s.receiveOnce(ctx, &req)
	}
	timeout, stopTimeout := s.cfg.timer(req.PollTime)
	defer stopTimeout()
	for {
		// Watch before looking, so that an arrival between the look and
		// the wait is not missed.
		arrived, done := s.cfg.Arrivals.watch(req.Topic)
		ms, err := s.receiveOnce(ctx, &req)
		if err != nil || len(ms) > 0 {
			done()
			return ms, err
		}
		var visible <-chan time.Time
		stopVisible := func() bool { return false }
		if d, ok := s.nextVisible(&req); ok {
			visible, stopVisible = s.cfg.timer(d)
		}
		var waitErr error
		stop := false
		select {
		case <-arrived:
		case <-visible:
		case <-timeout:
			stop = true
		case <-ctx.Done():
			stop, waitErr = true, ctx.Err()
		case <-s.stop:
			stop, waitErr = true, ErrClosed
		}
		done()
		stopVisible()
		if stop {
			return nil, waitErr
		}
	}
}

// nextVisible returns how long until the first in-flight message of the
// request's group and queues becomes visible again.
func (s *Service) nextVisible(req *ReceiveRequest) (time.Duration, bool) {
	s.mu.Lock()
	qs := make([]*queueState, 0, 4)
	for k, q := range s.queues {
		if k.group == req.Group && k.topic == req.Topic && (req.QueueID == AllQueues || k.queueID == req.QueueID) {
			qs = append(qs, q)
		}
	}
	s.mu.Unlock()
	now := s.now()
	first, ok := int64(0), false
	for _, q := range qs {
		q.mu.Lock()
		for _, e := range q.entries.all() {
			// Past deadlines are not waited for: such a message was not
			// delivered now for a reason time does not change (a DLQ
			// write that failed, the revive pass retries it).
			if !e.held() && e.deadline > now && (!ok || e.deadline < first) {
				first, ok = e.deadline, true
			}
		}
		q.mu.Unlock()
	}
	return time.Duration(first-now) * time.Millisecond, ok
}

// receiveOnce is one receive pass over the request's queues.
func (s *Service) receiveOnce(ctx context.Context, req *ReceiveRequest) ([]Message, error) {
	qids := []int32{req.QueueID}
	if req.QueueID == AllQueues {
		qids = s.cfg.QueueIDs(req.Topic)
		if len(qids) > 1 {
			// Start at a rotating queue so that a batch smaller than the
			// backlog does not always favour the first queues.
			r := int(s.now()) % len(qids)
			qids = append(slices.Clone(qids[r:]), qids[:r]...)
		}
	}
	var out []Message
	for _, qid := range qids {
		if len(out) >= req.Max {
			break
		}
		q := s.queue(queueKey{req.Group, req.Topic, qid})
		ms, err := s.receiveQueue(ctx, q, req, req.Max-len(out))
		if out == nil {
			out = ms // one queue: no copy
		} else {
			out = append(out, ms...)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// pick is one message chosen for a delivery.
type pick struct {
	offset  int64
	attempt int32
	group   string
	msg     *record.MessageExt // read already (new messages)
}

// receiveQueue delivers up to limit messages of one queue.
func (s *Service) receiveQueue(ctx context.Context, q *queueState, req *ReceiveRequest, limit int) ([]Message, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now()
	// A DLQ write that fails leaves its message waiting for the next
	// pass (never delivered again); the queue's other messages go on.
	if err := s.reviveQueueLocked(ctx, q, now); err != nil {
		s.reviveFailed(err)
	}
	maxAttempts := int32(s.cfg.MaxDeliveryAttempts(q.key.group))
	// Pop and pulls share the group's consumer offset; the furthest of
	// it and pop's own position wins (PopMessageProcessor.getPopOffset).
	committed := int64(-1)
	if s.cfg.CommittedOffset != nil {
		committed = s.cfg.CommittedOffset(q.key.group, q.key.topic, q.key.queueID)
	}
	if q.pos < 0 && committed < 0 {
		q.pos = s.cfg.FirstOffset(q.key.group, q.key.topic, q.key.queueID)
	}
	q.pos = max(q.pos, committed)
	sc := s.getScratch()
	defer s.putScratch(sc)
	picks, blocked := s.pickKnown(q, req.FIFO, now, limit, maxAttempts)
	start, end := q.pos, q.pos
	var held []pick
	if len(picks) < limit {
		var err error
		var fresh []pick
		fresh, held, end, err = s.readNew(q, req, limit-len(picks), blocked, sc)
		sc.picks = fresh
		if err != nil {
			return nil, err
		}
		if picks == nil {
			picks = fresh
		} else {
			picks = append(picks, fresh...)
		}
	}
	if len(picks) == 0 && len(held) == 0 && end == start {
		return nil, nil
	}
	deadline := now + req.InvisibleTime.Milliseconds()
	r := &logRecord{op: opCheckpoint, group: q.key.group, topic: q.key.topic, queueID: q.key.queueID,
		popTime: now, start: start, end: end, items: slices.Grow(sc.items[:0], len(picks)+len(held))}
	for _, p := range picks {
		r.items = append(r.items, logItem{offset: p.offset, attempt: p.attempt, deadline: deadline, msgGroup: p.group})
	}
	for _, p := range held {
		if !s.cfg.broken.NoHeldRecord {
			r.items = append(r.items, logItem{offset: p.offset, msgGroup: p.group})
		}
	}
	// Read the redelivered messages before the checkpoint, so that one
	// that is gone (retention) is not checkpointed.
	picks = s.loadKnown(q, picks)
	sc.items = r.items
	at, body, err := s.writeWith(ctx, r, sc.body)
	sc.body = body
	if err != nil {
		return nil, err
	}
	q.apply(r, at)
	if s.cfg.CommitOffset != nil && end > start {
		s.cfg.CommitOffset(q.key.group, q.key.topic, q.key.queueID, end)
	}
	return s.deliver(q, picks, at, now, req.InvisibleTime.Milliseconds(), sc), nil
}

// deliver makes the messages of picks' deliveries, recorded at ck, with
// their handles' texts: one buffer for the whole batch (one allocation,
// the shared fields formatted once) instead of a string a message.
func (s *Service) deliver(q *queueState, picks []pick, ck, now, invisible int64, sc *scratch) []Message {
	out := make([]Message, 0, len(picks))
	h := Handle{CkOffset: ck, PopTime: now, InvisibleTime: invisible, ReviveQueueID: reviveQueueID, TopicType: "0",
		BrokerName: s.cfg.BrokerName, QueueID: q.key.queueID}
	var prefixBuf [128]byte
	prefix := h.appendPrefix(prefixBuf[:0])
	text := sc.text[:0]
	var endsBuf [64]int
	ends := endsBuf[:0]
	for _, p := range picks {
		if p.msg == nil {
			continue
		}
		p.msg.ReconsumeTimes = p.attempt - 1
		h.Offset, h.CommitLogOffset = p.offset, p.msg.CommitLogOffset
		// Into the zeroed slot field by field: appending a Message
		// would copy it in whole, with a write barrier for each of its
		// pointers while the GC runs.
		out = out[:len(out)+1]
		m := &out[len(out)-1]
		m.MessageExt, m.Attempt = p.msg, p.attempt
		m.Handle = h
		text = h.appendOffsets(append(text, prefix...))
		ends = append(ends, len(text))
	}
	sc.text = text
	all, from := string(text), 0
	for i, end := range ends {
		out[i].handle = all[from:end]
		from = end
	}
	return out
}

// nextAttempt is the attempt after a.
func (s *Service) nextAttempt(a int32) int32 {
	if s.cfg.broken.NoAttemptCount {
		return 1
	}
	return a + 1
}

// pickKnown chooses among the queue's entries: in-flight messages whose
// invisible time ended, and (FIFO) held messages. For FIFO it delivers
// only the first unfinished message of each message group, and returns
// the groups that may not deliver another message now.
func (s *Service) pickKnown(q *queueState, fifo bool, now int64, limit int, maxAttempts int32) ([]pick, map[string]bool) {
	var picks []pick
	if !fifo {
		// Only messages whose invisible time ended, in queue order.
		if !q.dueBy(now) {
			return nil, nil
		}
		var due []int64
		first := int64(math.MaxInt64)
		for off, e := range q.entries.all() {
			if e.held() {
				continue
			}
			first = min(first, e.deadline)
			if e.deadline <= now && e.attempt < maxAttempts {
				due = append(due, off)
			}
		}
		q.dueFrom = first
		slices.Sort(due)
		for _, off := range due[:min(len(due), limit)] {
			e, _ := q.entries.get(off)
			picks = append(picks, pick{offset: off, attempt: s.nextAttempt(e.attempt), group: e.msgGroup})
		}
		return picks, nil
	}
	blocked := make(map[string]bool)
	lock := func(g string) {
		if !s.cfg.broken.NoOrderLock {
			blocked[g] = true
		}
	}
	for _, off := range q.sortedOffsets() {
		e, _ := q.entries.get(off)
		if blocked[e.msgGroup] {
			continue
		}
		lock(e.msgGroup)
		// A message at its last attempt waits for the DLQ, and holds its
		// message group back meanwhile.
		visible := e.held() || (e.deadline <= now && e.attempt < maxAttempts)
		if !visible || len(picks) >= limit {
			continue
		}
		picks = append(picks, pick{offset: off, attempt: s.nextAttempt(e.attempt), group: e.msgGroup})
	}
	return picks, blocked
}

// loadKnown reads the messages of picks that are not read yet; a message
// the store no longer holds is dropped from the state (retention
// deleted it).
func (s *Service) loadKnown(q *queueState, picks []pick) []pick {
	if !slices.ContainsFunc(picks, func(p pick) bool { return p.msg == nil }) {
		return picks // new messages only, read already
	}
	out := picks[:0]
	for _, p := range picks {
		if p.msg == nil {
			m, err := s.readAt(q.key.topic, q.key.queueID, p.offset)
			if err != nil {
				s.cfg.Logger.Warn("pop: in-flight message unreadable, dropped", "group", q.key.group,
					"topic", q.key.topic, "queue", q.key.queueID, "offset", p.offset, "err", err)
				q.entries.del(p.offset)
				continue
			}
			p.msg = m
		}
		out = append(out, p)
	}
	return out
}

// readAt reads the message at a queue offset.
func (s *Service) readAt(topic string, qid int32, off int64) (*record.MessageExt, error) {
	res, err := s.store.GetMessage(topic, qid, off, 1, nil)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	if res.Status != engine.Found || len(res.Messages) == 0 || res.Messages[0].QueueOffset != off {
		return nil, fmt.Errorf("pop: %s/%d offset %d: %v", topic, qid, off, res.Status)
	}
	// The store checked its records (recovery, PHYSICALOFFSET at
	// dispatch): -1 skips the position checks.
	return record.Decode(res.Messages[0].Record, -1, false)
}

// readNew reads messages from the queue's position: up to limit to
// deliver (appended to buf[:0]) and, for FIFO, those held behind a
// blocked message group. It returns the position after what it read.
func (s *Service) readNew(q *queueState, req *ReceiveRequest, limit int, blocked map[string]bool, sc *scratch) (fresh, held []pick, end int64, err error) {
	end = q.pos
	fresh = slices.Grow(sc.picks[:0], limit)
	room := s.cfg.MaxHeld
	if req.FIFO {
		room -= q.heldCount()
	}
	for len(fresh) < limit && (!req.FIFO || room > 0) {
		from, n := end, limit-len(fresh)
		if req.FIFO {
			n = min(max(n, 32), room)
		}
		res, err := s.store.GetMessage(q.key.topic, q.key.queueID, from, n, req.Filter)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("pop: read %s/%d at %d: %w", q.key.topic, q.key.queueID, from, err)
		}
		full := false
		for vs := res.Messages; len(vs) > 0; {
			// Each message read takes a place of limit or (FIFO, held)
			// of room: a chunk no longer than either is taken whole.
			// Its copies share their memory (record.Batch).
			k := min(len(vs), limit-len(fresh))
			if req.FIFO {
				k = min(k, room)
			}
			if k == 0 {
				full = true
				break
			}
			sc.batch.Grow(k)
			for _, v := range vs[:k] {
				if err := sc.batch.Add(v.Record); err != nil {
					sc.batch.Reset()
					res.Release()
					return nil, nil, 0, fmt.Errorf("pop: decode %s/%d at %d: %w", q.key.topic, q.key.queueID, v.QueueOffset, err)
				}
			}
			sc.msgs = sc.batch.Messages(sc.msgs[:0])
			for i, v := range vs[:k] {
				m := sc.msgs[i]
				p := pick{offset: v.QueueOffset, attempt: 1, msg: m}
				end = v.QueueOffset + 1
				if req.FIFO {
					p.group = m.Properties[record.PropertyShardingKey]
					if blocked[p.group] {
						p.msg = nil
						held = append(held, p)
						room--
						continue
					}
					if !s.cfg.broken.NoOrderLock {
						blocked[p.group] = true
					}
				}
				fresh = append(fresh, p)
			}
			vs = vs[k:]
		}
		next, status := res.NextBeginOffset, res.Status
		res.Release()
		if full {
			break
		}
		// Skip what the store skipped (filtered-out units, removed
		// files), but never move back (OffsetOverflowBadly).
		if status != engine.OffsetOverflowBadly && next > end {
			end = next
		}
		if end == from {
			break // nothing more now
		}
	}
	return fresh, held, end, nil
}
