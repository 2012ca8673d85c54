package timer

import (
	"context"
	"strconv"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// enqueueBatch is how many timer-topic units one read takes.
const enqueueBatch = 64

// enqueue appends a TimerLog unit and updates the wheel for each
// timer-topic message from the queue offset on (RocketMQ's
// TimerEnqueueGetService and TimerEnqueuePutService in one). It stops at
// the queue's end, or at a message whose slot is beyond the wheel's
// turn from the read time: delivery must catch up first (after a long
// downtime), or the slot would alias one still pending.
func (s *Service) enqueue(ctx context.Context) error {
	for ctx.Err() == nil {
		res, err := s.store.GetMessage(record.TimerTopic, 0, s.st.queueOffset, enqueueBatch, nil)
		if err != nil {
			return err
		}
		status, next := res.Status, res.NextBeginOffset
		if status != engine.Found {
			res.Release()
			switch status {
			case engine.OffsetTooSmall, engine.OffsetOverflowBadly, engine.MessageWasRemoving, engine.OffsetFoundNull:
				if next == s.st.queueOffset {
					return nil
				}
				s.cfg.Logger.Warn("timer: queue offset moved", "from", s.st.queueOffset, "to", next, "status", status)
				s.st.queueOffset = next
				continue
			}
			return nil
		}
		done, err := s.enqueueViews(res.Messages)
		res.Release()
		if err != nil || !done {
			return err
		}
	}
	return ctx.Err()
}

// enqueueViews enqueues the messages of one read; done is false when one
// did not fit in the wheel yet.
func (s *Service) enqueueViews(views []engine.MessageView) (done bool, err error) {
	for i := range views {
		v := &views[i]
		ext, derr := record.Decode(v.Record, v.CommitLogOffset, false)
		if derr != nil {
			s.cfg.Logger.Error("timer: unreadable timer message skipped", "queueOffset", v.QueueOffset, "err", derr)
			s.st.queueOffset = v.QueueOffset + 1
			continue
		}
		slot, ok := s.slotOf(ext)
		if !ok {
			s.st.queueOffset = v.QueueOffset + 1
			continue
		}
		if slot >= s.st.readTime+s.wheel.slots*s.cfg.PrecisionMs {
			return false, nil
		}
		if err := s.enqueueOne(ext, slot); err != nil {
			return false, err
		}
		s.st.queueOffset = v.QueueOffset + 1
	}
	s.publish()
	return true, nil
}

// slotOf returns the slot a timer message goes to: its TIMER_OUT_MS, or
// the next slot to deliver when that has passed (a message that arrives
// late is delivered at once, never early).
func (s *Service) slotOf(ext *record.MessageExt) (int64, bool) {
	out, err := strconv.ParseInt(ext.Properties[record.PropertyTimerOutMS], 10, 64)
	if err != nil || ext.Properties[record.PropertyRealTopic] == "" {
		s.cfg.Logger.Error("timer: message without TIMER_OUT_MS or REAL_TOPIC skipped",
			"offset", ext.CommitLogOffset, "TIMER_OUT_MS", ext.Properties[record.PropertyTimerOutMS])
		return 0, false
	}
	return max(s.cfg.roundUp(out), s.st.readTime), true
}

// enqueueOne appends the unit of ext to its slot's chain
// (TimerMessageStore.doEnqueue).
func (s *Service) enqueueOne(ext *record.MessageExt, slotTime int64) error {
	realTopic := ext.Properties[record.PropertyRealTopic]
	del := ext.Properties[record.PropertyTimerDelUniqKey] != ""
	now := s.cfg.now()
	sl := s.wheel.get(slotTime)
	u := record.TimerUnit{PrevPos: sl.LastPos, Magic: record.TimerMagicDefault, WriteMs: now, Delay: int32(slotTime - now),
		OffsetPy: ext.CommitLogOffset, SizePy: ext.StoreSize, TopicHash: record.JavaStringHashCode(realTopic)}
	if int64(u.Delay) != slotTime-now {
		// More than 24 days apart: anchor the unit at its slot.
		u.WriteMs, u.Delay = slotTime, 0
	}
	if del {
		u.Magic |= record.TimerMagicDelete
	}
	pos, err := s.log.append(u)
	if err != nil {
		return err
	}
	if sl.FirstPos < 0 {
		sl.FirstPos = pos
	}
	sl.LastPos = pos
	if !del {
		sl.Num++
		s.st.pending[realTopic]++
	}
	s.wheel.put(sl)
	return nil
}
