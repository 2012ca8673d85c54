package pop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Ack finishes a delivery: the message is done for the group. The ack
// record is written (durable under SYNC_FLUSH) before Ack returns nil.
// A handle whose delivery is over answers ErrStaleHandle.
func (s *Service) Ack(ctx context.Context, group, topic, handle string) error {
	return s.AckBatch(ctx, group, topic, []string{handle})[0]
}

// AckBatch acks several deliveries, with one record per queue. The
// result has one error (nil: acked) per handle, in order.
func (s *Service) AckBatch(ctx context.Context, group, topic string, handles []string) []error {
	errs := make([]error, len(handles))
	if s.closed.Load() {
		for i := range errs {
			errs[i] = ErrClosed
		}
		return errs
	}
	sc := s.getScratch()
	defer s.putScratch(sc)
	// What an ack needs of each handle: a Handle's text fields would
	// make the slice one the GC scans.
	parsed := slices.Grow(sc.refs[:0], len(handles))[:len(handles)]
	sc.refs = parsed
	var qids []int32 // in order of first appearance; usually one
	var hp handleParser
	for i, hs := range handles {
		h, err := hp.parse(hs)
		if err != nil {
			errs[i] = err
			continue
		}
		parsed[i] = ackRef{QueueID: h.QueueID, Offset: h.Offset, CkOffset: h.CkOffset}
		if !slices.Contains(qids, h.QueueID) {
			qids = append(qids, h.QueueID)
		}
	}
	idx := slices.Grow(sc.idx[:0], len(handles))
	for _, qid := range qids {
		idx = idx[:0]
		for i := range parsed {
			if errs[i] == nil && parsed[i].QueueID == qid {
				idx = append(idx, i)
			}
		}
		s.ackQueue(ctx, s.queue(queueKey{group, topic, qid}), parsed, idx, errs, sc)
	}
	sc.idx = idx
	return errs
}

// ackRef is the part of a Handle an ack reads.
type ackRef struct {
	QueueID          int32
	Offset, CkOffset int64
}

// ackQueue acks the handles parsed[idx] of one queue.
func (s *Service) ackQueue(ctx context.Context, q *queueState, parsed []ackRef, idx []int, errs []error, sc *scratch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := &logRecord{op: opAck, group: q.key.group, topic: q.key.topic, queueID: q.key.queueID, popTime: s.now(),
		items: slices.Grow(sc.items[:0], len(idx))}
	for _, i := range idx {
		h := parsed[i]
		if !q.current(h.Offset, h.CkOffset) {
			errs[i] = fmt.Errorf("%w: %s/%d offset %d", ErrStaleHandle, q.key.topic, q.key.queueID, h.Offset)
			continue
		}
		r.items = append(r.items, logItem{offset: h.Offset, ck: h.CkOffset})
	}
	sc.items = r.items
	if len(r.items) == 0 {
		return
	}
	if s.cfg.broken.AckBeforeDurable {
		r.items = slices.Clone(r.items) // kept past the call
		s.unwrittenMu.Lock()
		s.unwritten = append(s.unwritten, r)
		s.unwrittenMu.Unlock()
		q.apply(r, -1)
		return
	}
	at, body, err := s.writeWith(ctx, r, sc.body)
	sc.body = body
	if err != nil {
		// The handles of this queue still without an error are those
		// of the record.
		for _, i := range idx {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return
	}
	q.apply(r, at)
}

// ChangeInvisibleDuration makes a delivered message invisible for d from
// now and returns the handle of the changed delivery (the old one is
// stale). The record is written before it returns.
func (s *Service) ChangeInvisibleDuration(ctx context.Context, group, topic, handle string, d time.Duration) (Handle, error) {
	if s.closed.Load() {
		return Handle{}, ErrClosed
	}
	if d < 0 {
		return Handle{}, fmt.Errorf("%w: invisible duration %v < 0", ErrBadRequest, d)
	}
	h, err := ParseHandle(handle)
	if err != nil {
		return Handle{}, err
	}
	q := s.queue(queueKey{group, topic, h.QueueID})
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.current(h.Offset, h.CkOffset) {
		return Handle{}, fmt.Errorf("%w: %s/%d offset %d", ErrStaleHandle, topic, h.QueueID, h.Offset)
	}
	now := s.now()
	r := &logRecord{op: opChange, group: group, topic: topic, queueID: h.QueueID, popTime: now,
		items: []logItem{{offset: h.Offset, ck: h.CkOffset, deadline: now + d.Milliseconds()}}}
	at, err := s.write(ctx, r)
	if err != nil {
		return Handle{}, err
	}
	q.apply(r, at)
	// A receive waiting on the group's old deadline would sleep past the
	// new one: wake it to look again.
	if s.cfg.Arrivals != nil {
		s.cfg.Arrivals.wake([]byte(topic))
	}
	h.CkOffset, h.PopTime, h.InvisibleTime = at, now, d.Milliseconds()
	return h, nil
}

// ReviveReport says what a Revive pass did.
type ReviveReport struct {
	// Visible is the number of in-flight messages whose invisible time
	// has ended: the next receive delivers them again.
	Visible int
	// DeadLettered is the number of messages moved to their group's DLQ.
	DeadLettered int
}

// Revive is the background revive pass (the owner calls it in manual
// mode): a message whose invisible time ended without an ack is visible
// again, and one that has had its group's maxDeliveryAttempts goes to
// the group's DLQ (the DLQ write is durable before the record that
// finishes the message, so a crash between them stores it twice rather
// than never).
func (s *Service) Revive(ctx context.Context) (ReviveReport, error) {
	if s.closed.Load() {
		return ReviveReport{}, ErrClosed
	}
	if err := s.flushUnwritten(ctx); err != nil {
		return ReviveReport{}, err
	}
	qs := s.sortedQueues()
	var rep ReviveReport
	var errs []error
	now := s.now()
	for _, q := range qs {
		q.mu.Lock()
		n, err := s.deadLetterLocked(ctx, q, now)
		rep.DeadLettered += n
		for _, e := range q.entries.all() {
			if !e.held() && e.deadline <= now {
				rep.Visible++
			}
		}
		q.mu.Unlock()
		errs = append(errs, err)
	}
	if s.compactDue() {
		errs = append(errs, s.Compact(ctx))
	}
	return rep, errors.Join(errs...)
}

// sortedQueues returns the queue states in a fixed order, which makes
// the revive log the same in every run of a deterministic test.
func (s *Service) sortedQueues() []*queueState {
	s.mu.Lock()
	qs := make([]*queueState, 0, len(s.queues))
	for _, q := range s.queues {
		qs = append(qs, q)
	}
	s.mu.Unlock()
	slices.SortFunc(qs, func(a, b *queueState) int {
		return cmp.Or(cmp.Compare(a.key.group, b.key.group), cmp.Compare(a.key.topic, b.key.topic),
			cmp.Compare(a.key.queueID, b.key.queueID))
	})
	return qs
}

// reviveQueueLocked moves the queue's exhausted messages to the DLQ.
func (s *Service) reviveQueueLocked(ctx context.Context, q *queueState, now int64) error {
	_, err := s.deadLetterLocked(ctx, q, now)
	return err
}

// deadLetterLocked stores in the DLQ each message of q whose invisible
// time ended at its group's last attempt, then writes one record that
// finishes them.
func (s *Service) deadLetterLocked(ctx context.Context, q *queueState, now int64) (int, error) {
	if !q.dueBy(now) {
		return 0, nil // nothing's invisible time has ended
	}
	maxAttempts := int32(s.cfg.MaxDeliveryAttempts(q.key.group))
	r := &logRecord{op: opDeadLetter, group: q.key.group, topic: q.key.topic, queueID: q.key.queueID, popTime: now}
	var errs []error
	var due []int64
	for off, e := range q.entries.all() {
		if !e.held() && e.deadline <= now && e.attempt >= maxAttempts {
			due = append(due, off)
		}
	}
	slices.Sort(due)
	for _, off := range due {
		e, _ := q.entries.get(off)
		m, err := s.readAt(q.key.topic, q.key.queueID, off)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.ReconsumeTimes = e.attempt
		if err := s.deadLetter(ctx, q.key.group, m); err != nil {
			errs = append(errs, fmt.Errorf("pop: store %s/%d offset %d in the DLQ of %s: %w",
				q.key.topic, q.key.queueID, off, q.key.group, err))
			continue
		}
		r.items = append(r.items, logItem{offset: off, ck: e.ck})
	}
	if len(r.items) > 0 {
		at, err := s.write(ctx, r)
		if err != nil {
			return 0, errors.Join(append(errs, err)...)
		}
		q.apply(r, at)
	}
	return len(r.items), errors.Join(errs...)
}

// flushUnwritten writes the acks the AckBeforeDurable broken variant
// kept in memory.
func (s *Service) flushUnwritten(ctx context.Context) error {
	s.unwrittenMu.Lock()
	rs := s.unwritten
	s.unwritten = nil
	s.unwrittenMu.Unlock()
	for _, r := range rs {
		if _, err := s.write(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// ForwardToDeadLetter moves a delivered message to its group's DLQ now
// (the gRPC ForwardMessageToDeadLetterQueue: a consumer gives up on it):
// the DLQ write, then the record that finishes the message.
func (s *Service) ForwardToDeadLetter(ctx context.Context, group, topic, handle string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	h, err := ParseHandle(handle)
	if err != nil {
		return err
	}
	q := s.queue(queueKey{group, topic, h.QueueID})
	q.mu.Lock()
	defer q.mu.Unlock()
	e, _ := q.entries.get(h.Offset)
	if !q.current(h.Offset, h.CkOffset) {
		return fmt.Errorf("%w: %s/%d offset %d", ErrStaleHandle, topic, h.QueueID, h.Offset)
	}
	m, err := s.readAt(topic, h.QueueID, h.Offset)
	if err != nil {
		return err
	}
	m.ReconsumeTimes = e.attempt
	if err := s.deadLetter(ctx, group, m); err != nil {
		return fmt.Errorf("pop: store %s/%d offset %d in the DLQ of %s: %w", topic, h.QueueID, h.Offset, group, err)
	}
	r := &logRecord{op: opDeadLetter, group: group, topic: topic, queueID: h.QueueID, popTime: s.now(),
		items: []logItem{{offset: h.Offset, ck: h.CkOffset}}}
	at, err := s.write(ctx, r)
	if err != nil {
		return err
	}
	q.apply(r, at)
	return nil
}
