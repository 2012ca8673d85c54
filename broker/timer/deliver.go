package timer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/record"
)

// deliverDue delivers every slot whose time has come, in time order, and
// moves the read time past each (RocketMQ's TimerDequeueGetService and
// TimerDequeuePutMessageService in one). Then it reads the next slot's
// messages ahead, so that at its time only the puts remain.
func (s *Service) deliverDue(ctx context.Context) error {
	for s.st.readTime <= s.cfg.now() {
		if err := ctx.Err(); err != nil {
			return err
		}
		sl := s.wheel.get(s.st.readTime)
		if sl.FirstPos >= 0 {
			p, err := s.prepared(sl)
			if err != nil {
				return err
			}
			if err := s.deliverSlot(ctx, p); err != nil {
				return err
			}
		}
		s.st.readTime += s.cfg.PrecisionMs
		s.publish()
		// Catch-up after a downtime may cross many slots; a message that
		// waits for room in the wheel goes in as soon as there is.
		if sl.FirstPos >= 0 {
			if err := s.enqueue(ctx); err != nil {
				return err
			}
		}
	}
	if sl := s.wheel.get(s.st.readTime); sl.FirstPos >= 0 {
		if _, err := s.prepared(sl); err != nil {
			return err
		}
		s.publish()
	}
	return nil
}

// preparedSlot is a slot read ahead: its units and, for each, the
// message to deliver (nil: a recall, a recalled message, or one gone
// from the CommitLog) and its real topic.
type preparedSlot struct {
	timeMs, lastPos int64
	bytes           int64 // estimated heap of msgs
	units           []record.TimerUnit
	msgs            []*record.Message
	topics          []string
}

// prepared returns the slot read ahead, reading it again when units
// were added to it since.
func (s *Service) prepared(sl record.TimerSlot) (*preparedSlot, error) {
	if p := s.next; p != nil && p.timeMs == sl.TimeMs && p.lastPos == sl.LastPos {
		return p, nil
	}
	units, err := s.slotUnits(sl)
	if err != nil {
		return nil, err
	}
	p := &preparedSlot{timeMs: sl.TimeMs, lastPos: sl.LastPos, units: units,
		msgs: make([]*record.Message, len(units)), topics: make([]string, len(units))}
	recalled := s.recalls(units)
	for i, u := range units {
		if u.IsDelete() {
			continue
		}
		ext, err := s.store.LookMessageByOffset(u.OffsetPy)
		if err != nil {
			s.cfg.Logger.Error("timer: timer message gone from the CommitLog; dropped", "offset", u.OffsetPy, "slot", sl.TimeMs, "err", err)
			continue
		}
		props := ext.Properties
		p.topics[i] = props[record.PropertyRealTopic]
		if !recalled[record.TimerDeleteKey(props[record.PropertyRealTopic], props[record.PropertyUniqClientMsgID])] {
			p.msgs[i] = timeUp(ext, u)
			p.bytes += messageBytes(p.msgs[i])
		}
	}
	s.next = p
	return p, nil
}

// slotUnits returns the units of a slot in enqueue order, walking its
// chain back from the last unit.
func (s *Service) slotUnits(sl record.TimerSlot) ([]record.TimerUnit, error) {
	var units []record.TimerUnit
	for pos := sl.LastPos; pos >= sl.FirstPos && pos >= 0; {
		u, err := s.log.read(pos)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", sl.TimeMs, err)
		}
		if u.SlotTime() != sl.TimeMs {
			return nil, fmt.Errorf("%w: slot %d: TimerLog unit at %d is of slot %d", ErrCorrupt, sl.TimeMs, pos, u.SlotTime())
		}
		units = append(units, u)
		pos = u.PrevPos
	}
	slices.Reverse(units)
	return units, nil
}

// messageBytes estimates the heap of a message: its struct, body and
// property map entries.
func messageBytes(m *record.Message) int64 {
	n := int64(160 + len(m.Body))
	for k, v := range m.Properties {
		n += int64(48 + len(k) + len(v))
	}
	return n
}

// deliverSlot puts each message of a prepared slot to its real topic,
// up to PutsInFlight at a time. A failed put fails the slot, which is
// tried again whole: delivered remembers what it already put.
func (s *Service) deliverSlot(ctx context.Context, p *preparedSlot) error {
	var todo []int
	for i, u := range p.units {
		if _, done := s.delivered[u.OffsetPy]; p.msgs[i] != nil && !done {
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 {
		batch := todo[:min(len(todo), max(1, s.cfg.PutsInFlight))]
		todo = todo[len(batch):]
		if err := s.putBatch(ctx, p, batch); err != nil {
			return err
		}
	}
	s.slotDone(p)
	return nil
}

// putBatch puts the slot's messages at idx, each in a goroutine of its
// own when there are several (a replicated group's puts then share Raft
// rounds), and remembers those stored.
func (s *Service) putBatch(ctx context.Context, p *preparedSlot, idx []int) error {
	type result struct {
		stored bool
		err    error
	}
	res := make([]result, len(idx))
	now := s.cfg.now()
	for _, i := range idx {
		p.msgs[i].Properties[record.PropertyTimerDequeueMS] = strconv.FormatInt(now, 10)
	}
	before := s.store.CommitLog().MaxOffset()
	if len(idx) == 1 {
		res[0].stored, res[0].err = s.put(ctx, p.msgs[idx[0]])
	} else {
		var wg sync.WaitGroup
		for k, i := range idx {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[k].stored, res[k].err = s.put(ctx, p.msgs[i])
			}()
		}
		wg.Wait()
	}
	var errs []error
	for k, i := range idx {
		if r := res[k]; r.err != nil {
			errs = append(errs, r.err)
		} else {
			u := p.units[i]
			s.delivered[u.OffsetPy] = -1
			if r.stored {
				s.lateness.observe(now - u.SlotTime())
			}
		}
	}
	if len(errs) > 0 {
		// A failed put may have stored its message all the same (a
		// replicated put whose leader lost its lease reports an outcome
		// it does not know): the next step reads the CommitLog from
		// before the puts first.
		if !s.rescan {
			s.seenTo, s.rescan = before, true
		}
		return errors.Join(errs...)
	}
	return nil
}

// slotDone drops a delivered slot's messages from the counts and the
// memory.
func (s *Service) slotDone(p *preparedSlot) {
	for i, u := range p.units {
		delete(s.delivered, u.OffsetPy)
		if p.topics[i] != "" {
			s.decPending(p.topics[i])
		}
	}
	s.next = nil
}

// follow is the step of a replica on standby: it reads the leader's
// deliveries from the CommitLog, enqueues the replicated timer topic as
// the leader does, and moves the read time past each due slot whose
// every message the leader delivered (or that a recall of the slot
// drops, or that is gone from the CommitLog: the leader drops it too).
// It stops at the first due slot still to deliver: elected, the replica
// delivers from there, and skips what it saw delivered.
func (s *Service) follow(ctx context.Context) error {
	defer s.publish()
	// With nothing pending and every dispatched timer message enqueued,
	// a delivery in the dispatched CommitLog is of no slot still to pass
	// (its message is in the log before it): a group that sends no timers
	// costs its followers no read. A timer message not dispatched yet may
	// be followed by its delivery: the read goes on from there.
	dispatched := engineops.Of(s.store).ReputFromOffset()
	if s.cfg.broken.IdleSkipsToEnd {
		dispatched = s.store.CommitLog().MaxOffset()
	}
	if s.pendingTotal() == 0 && s.store.MaxOffsetInQueue(record.TimerTopic, 0) <= s.st.queueOffset {
		s.seenTo = max(s.seenTo, dispatched)
	}
	if err := s.scanDeliveries(s.seenTo); err != nil {
		return err
	}
	if err := s.enqueue(ctx); err != nil {
		return err
	}
	for s.st.readTime <= s.cfg.now() {
		if err := ctx.Err(); err != nil {
			return err
		}
		sl := s.wheel.get(s.st.readTime)
		if sl.FirstPos >= 0 {
			p, err := s.prepared(sl)
			if err != nil {
				return err
			}
			for i, u := range p.units {
				if _, done := s.delivered[u.OffsetPy]; p.msgs[i] != nil && !done && !s.cfg.broken.FollowUnseen {
					return nil // the leader has not delivered it yet
				}
			}
			s.slotDone(p)
		}
		s.st.readTime += s.cfg.PrecisionMs
		if sl.FirstPos >= 0 {
			if err := s.enqueue(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) decPending(topic string) {
	if n := s.st.pending[topic] - 1; n > 0 {
		s.st.pending[topic] = n
	} else {
		delete(s.st.pending, topic)
	}
}

// recalls returns the delete keys of the slot's recalls.
func (s *Service) recalls(units []record.TimerUnit) map[string]bool {
	var out map[string]bool
	for _, u := range units {
		if !u.IsDelete() {
			continue
		}
		ext, err := s.store.LookMessageByOffset(u.OffsetPy)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[ext.Properties[record.PropertyTimerDelUniqKey]] = true
	}
	return out
}

// put stores a delivered message; a message the store refuses for good
// is dropped (stored false, no error).
func (s *Service) put(ctx context.Context, m *record.Message) (stored bool, err error) {
	if s.cfg.Put != nil {
		_, err = s.cfg.Put(ctx, m)
	} else {
		_, err = s.store.Put(ctx, m)
	}
	if errors.Is(err, engine.ErrMessageIllegal) {
		s.cfg.Logger.Error("timer: delivered message refused; dropped", "topic", m.Topic, "err", err)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("timer: deliver to %s/%d: %w", m.Topic, m.QueueID, err)
	}
	return true, nil
}

// timeUp builds the delivered message (TimerMessageStore.convert): its
// real topic and queue, WAIT false, the enqueue time, and the source
// offset that makes a replay after a crash idempotent (the dequeue time
// is set at the put).
func timeUp(ext *record.MessageExt, u record.TimerUnit) *record.Message {
	props := ext.Properties
	qid, err := strconv.ParseInt(props[record.PropertyRealQueueID], 10, 32)
	if err != nil || qid < 0 {
		qid = 0
	}
	m := ext.Message
	props[record.PropertyWaitStoreMsgOK] = "false"
	props[record.PropertyTimerEnqueueMS] = strconv.FormatInt(u.WriteMs, 10)
	props[record.PropertyTimerSourceOffset] = strconv.FormatInt(u.OffsetPy, 10)
	m.Topic, m.QueueID, m.Properties, m.EncodedProperties = props[record.PropertyRealTopic], int32(qid), props, nil
	return &m
}
