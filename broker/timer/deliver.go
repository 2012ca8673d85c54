package timer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// deliverDue delivers every slot whose time has come, in time order, and
// moves the read time past each (RocketMQ's TimerDequeueGetService and
// TimerDequeuePutMessageService in one).
func (s *Service) deliverDue(ctx context.Context) error {
	for s.st.readTime <= s.cfg.Now() {
		if err := ctx.Err(); err != nil {
			return err
		}
		sl := s.wheel.get(s.st.readTime)
		if sl.FirstPos >= 0 {
			if err := s.deliverSlot(ctx, sl); err != nil {
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
	return nil
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

// deliverSlot puts each message of a slot to its real topic, except
// those a recall of the slot names. A failed put fails the slot, which
// is tried again whole: delivered remembers what it already put.
func (s *Service) deliverSlot(ctx context.Context, sl record.TimerSlot) error {
	units, err := s.slotUnits(sl)
	if err != nil {
		return err
	}
	recalled := s.recalls(units)
	topics := make([]string, 0, len(units))
	for _, u := range units {
		if u.IsDelete() {
			continue
		}
		ext, err := s.store.LookMessageByOffset(u.OffsetPy)
		if err != nil {
			s.cfg.Logger.Error("timer: timer message gone from the CommitLog; dropped", "offset", u.OffsetPy, "slot", sl.TimeMs, "err", err)
			continue
		}
		props := ext.Properties
		topics = append(topics, props[record.PropertyRealTopic])
		if s.delivered[u.OffsetPy] || recalled[record.TimerDeleteKey(props[record.PropertyRealTopic], props[record.PropertyUniqClientMsgID])] {
			continue
		}
		if err := s.put(ctx, timeUp(ext, u, s.cfg.Now())); err != nil {
			return err
		}
		s.delivered[u.OffsetPy] = true
	}
	// The slot is done: its messages leave the counts and the memory.
	for _, u := range units {
		delete(s.delivered, u.OffsetPy)
	}
	for _, t := range topics {
		s.decPending(t)
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
// is dropped.
func (s *Service) put(ctx context.Context, m *record.Message) error {
	var err error
	if s.cfg.Put != nil {
		_, err = s.cfg.Put(ctx, m)
	} else {
		_, err = s.store.Put(ctx, m)
	}
	if errors.Is(err, engine.ErrMessageIllegal) {
		s.cfg.Logger.Error("timer: delivered message refused; dropped", "topic", m.Topic, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("timer: deliver to %s/%d: %w", m.Topic, m.QueueID, err)
	}
	return nil
}

// timeUp builds the delivered message (TimerMessageStore.convert): its
// real topic and queue, WAIT false, the enqueue and dequeue times, and
// the source offset that makes a replay after a crash idempotent.
func timeUp(ext *record.MessageExt, u record.TimerUnit, now int64) *record.Message {
	props := ext.Properties
	qid, err := strconv.ParseInt(props[record.PropertyRealQueueID], 10, 32)
	if err != nil || qid < 0 {
		qid = 0
	}
	m := ext.Message
	props[record.PropertyWaitStoreMsgOK] = "false"
	props[record.PropertyTimerEnqueueMS] = strconv.FormatInt(u.WriteMs, 10)
	props[record.PropertyTimerDequeueMS] = strconv.FormatInt(now, 10)
	props[record.PropertyTimerSourceOffset] = strconv.FormatInt(u.OffsetPy, 10)
	m.Topic, m.QueueID, m.Properties, m.EncodedProperties = props[record.PropertyRealTopic], int32(qid), props, nil
	return &m
}
