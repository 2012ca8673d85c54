package pop

import (
	"context"
	"fmt"
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
	Filter engine.MessageFilter
	// Max is the most messages returned (>= 1).
	Max int
	// InvisibleTime is how long the messages stay invisible (>= 1 ms).
	InvisibleTime time.Duration
	// FIFO delivers each message group (property __SHARDINGKEY) in
	// queue order: a message is not delivered while an earlier message
	// of its group in the queue is in flight.
	FIFO bool
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
// Receive returns. It does not wait for messages to arrive: no message
// is an empty result.
func (s *Service) Receive(ctx context.Context, req ReceiveRequest) ([]Message, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	qids := []int32{req.QueueID}
	if req.QueueID == AllQueues {
		qids = slices.Clone(s.store.Topics()[req.Topic])
		slices.Sort(qids)
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
		ms, err := s.receiveQueue(ctx, q, &req, req.Max-len(out))
		out = append(out, ms...)
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

// receiveQueue delivers up to max messages of one queue.
func (s *Service) receiveQueue(ctx context.Context, q *queueState, req *ReceiveRequest, max int) ([]Message, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := s.now()
	if err := s.reviveQueueLocked(ctx, q, now); err != nil {
		return nil, err
	}
	if q.pos < 0 {
		q.pos = s.cfg.FirstOffset(q.key.group, q.key.topic, q.key.queueID)
	}
	if s.cfg.CommittedOffset != nil {
		if c := s.cfg.CommittedOffset(q.key.group, q.key.topic, q.key.queueID); c > q.pos {
			q.pos = c
		}
	}
	picks, blocked := s.pickKnown(q, req.FIFO, now, max)
	start, end := q.pos, q.pos
	var held []pick
	if len(picks) < max {
		var err error
		var fresh []pick
		fresh, held, end, err = s.readNew(q, req, max-len(picks), blocked)
		if err != nil {
			return nil, err
		}
		picks = append(picks, fresh...)
	}
	if len(picks) == 0 && len(held) == 0 && end == start {
		return nil, nil
	}
	deadline := now + req.InvisibleTime.Milliseconds()
	r := &logRecord{op: opCheckpoint, group: q.key.group, topic: q.key.topic, queueID: q.key.queueID,
		popTime: now, start: start, end: end}
	for _, p := range picks {
		r.items = append(r.items, logItem{offset: p.offset, attempt: p.attempt, deadline: deadline, msgGroup: p.group})
	}
	for _, p := range held {
		r.items = append(r.items, logItem{offset: p.offset, msgGroup: p.group})
	}
	// Read the redelivered messages before the checkpoint, so that one
	// that is gone (retention) is not checkpointed.
	picks = s.loadKnown(q, picks)
	at, err := s.write(ctx, r)
	if err != nil {
		return nil, err
	}
	q.apply(r, at)
	if s.cfg.CommitOffset != nil && end > start {
		s.cfg.CommitOffset(q.key.group, q.key.topic, q.key.queueID, end)
	}
	out := make([]Message, 0, len(picks))
	for _, p := range picks {
		if p.msg == nil {
			continue
		}
		p.msg.ReconsumeTimes = p.attempt - 1
		out = append(out, Message{MessageExt: p.msg, Attempt: p.attempt, Handle: Handle{CkOffset: at, PopTime: now,
			InvisibleTime: req.InvisibleTime.Milliseconds(), ReviveQueueID: reviveQueueID, TopicType: "0",
			BrokerName: s.cfg.BrokerName, QueueID: q.key.queueID, Offset: p.offset}})
	}
	return out, nil
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
func (s *Service) pickKnown(q *queueState, fifo bool, now int64, max int) ([]pick, map[string]bool) {
	var picks []pick
	var blocked map[string]bool
	if fifo {
		blocked = make(map[string]bool)
	}
	for _, off := range q.sortedOffsets() {
		e := q.entries[off]
		if fifo {
			if blocked[e.msgGroup] {
				continue
			}
			blocked[e.msgGroup] = true
		}
		visible := e.held() || e.deadline <= now
		if !visible || len(picks) >= max {
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
	out := picks[:0]
	for _, p := range picks {
		if p.msg == nil {
			m, err := s.readAt(q.key.topic, q.key.queueID, p.offset)
			if err != nil {
				s.cfg.Logger.Warn("pop: in-flight message unreadable, dropped", "group", q.key.group,
					"topic", q.key.topic, "queue", q.key.queueID, "offset", p.offset, "err", err)
				delete(q.entries, p.offset)
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
	res, err := s.store.GetMessage("", topic, qid, off, 1, nil)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	if res.Status != engine.Found || len(res.Messages) == 0 || res.Messages[0].QueueOffset != off {
		return nil, fmt.Errorf("pop: %s/%d offset %d: %v", topic, qid, off, res.Status)
	}
	v := res.Messages[0]
	return record.Decode(v.Record, v.CommitLogOffset, false)
}

// readNew reads messages from the queue's position: up to limit to
// deliver and, for FIFO, those held behind a blocked message group. It
// returns the position after what it read.
func (s *Service) readNew(q *queueState, req *ReceiveRequest, limit int, blocked map[string]bool) (fresh, held []pick, end int64, err error) {
	end = q.pos
	room := s.cfg.MaxHeld - q.heldCount()
	for len(fresh) < limit && (!req.FIFO || room > 0) {
		from, n := end, limit-len(fresh)
		if req.FIFO {
			n = min(max(n, 32), room)
		}
		res, err := s.store.GetMessage(req.Group, q.key.topic, q.key.queueID, from, n, req.Filter)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("pop: read %s/%d at %d: %w", q.key.topic, q.key.queueID, from, err)
		}
		full := false
		for _, v := range res.Messages {
			if len(fresh) >= limit || (req.FIFO && room == 0) {
				full = true
				break
			}
			m, err := record.Decode(v.Record, v.CommitLogOffset, false)
			if err != nil {
				res.Release()
				return nil, nil, 0, fmt.Errorf("pop: decode %s/%d at %d: %w", q.key.topic, q.key.queueID, v.QueueOffset, err)
			}
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
				blocked[p.group] = true
			}
			fresh = append(fresh, p)
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
