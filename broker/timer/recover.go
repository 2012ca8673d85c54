package timer

import (
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/record"
)

// recover opens the timer files at the last checkpoint (see the package
// doc) and finds the deliveries made after it.
func (s *Service) recover() error {
	ck, ok, err := loadCheckpoint(s.fs)
	if err != nil {
		return err
	}
	slots := s.cfg.wheelSlots()
	if !ok {
		now := s.cfg.now()
		ck = checkpoint{ReadTimeMs: now - now%s.cfg.PrecisionMs, ScanFrom: s.store.CommitLog().MaxOffset(),
			PrecisionMs: s.cfg.PrecisionMs, Slots: slots, QueueOffset: s.store.MinOffsetInQueue(record.TimerTopic, 0)}
	}
	if ck.PrecisionMs != s.cfg.PrecisionMs || ck.Slots != slots {
		return fmt.Errorf("%w: the timer store was written with timerPrecisionMs %d and %d wheel slots, the config gives %d and %d "+
			"(timerMaxDelaySec %d): a pending timer would be lost", ErrBadConfig, ck.PrecisionMs, ck.Slots, s.cfg.PrecisionMs, slots,
			int64(s.cfg.MaxDelay.Seconds()))
	}
	if s.wheel, err = openWheel(s.fs, slots, s.cfg.PrecisionMs); err != nil {
		return err
	}
	// Redo: the checkpoint is saved before its slots reach the wheel
	// file, which may hold some, all or none of them.
	if err := s.wheel.apply(ck.redoSlots()); err != nil {
		return err
	}
	if s.log, err = openTimerLog(s.fs, s.cfg.LogFileSize, ck.LogEnd, ck.FileMaxSlot); err != nil {
		return err
	}
	s.st = state{queueOffset: ck.QueueOffset, readTime: ck.ReadTimeMs, scanFrom: ck.ScanFrom, pending: ck.Pending}
	if s.st.pending == nil {
		s.st.pending = map[string]int64{}
	}
	s.delivered = map[int64]int64{}
	s.seenTo, s.savedQueueOffset = s.scanStart(ck), ck.QueueOffset
	for _, n := range ck.Pending {
		s.savedPending += n
	}
	if !s.cfg.broken.NoDedup {
		if err := s.scanDeliveries(s.seenTo); err != nil {
			return err
		}
	}
	s.publish()
	if !ok {
		// The first checkpoint, before any delivery: a crash before the
		// next one finds the deliveries from here.
		return s.Checkpoint()
	}
	return nil
}

// scanStart returns where recovery reads the CommitLog for deliveries.
// A service with nothing pending takes no checkpoint (nor does a
// replica on standby that has nothing to follow), so its checkpoint's
// scan start may be far behind the CommitLog's end; but then a delivery
// made after the checkpoint is of a message enqueued after it, and lies
// after that message: the read starts at the first timer message the
// checkpoint did not enqueue, or at the end of what is dispatched when
// there is none.
func (s *Service) scanStart(ck checkpoint) int64 {
	from := ck.ScanFrom
	for _, n := range ck.Pending {
		if n > 0 && !s.cfg.broken.ScanFromQueue {
			return from
		}
	}
	q := max(ck.QueueOffset, s.store.MinOffsetInQueue(record.TimerTopic, 0))
	if q < s.store.MaxOffsetInQueue(record.TimerTopic, 0) {
		if phy, err := s.store.CommitLogOffsetInQueue(record.TimerTopic, 0, q); err == nil {
			return max(from, phy)
		}
		return from
	}
	return max(from, engineops.Of(s.store).ReputFromOffset())
}

// scanDeliveries reads the CommitLog from from to its end for delivered
// timer messages (TIMER_SOURCE_OFFSET), made after the checkpoint (whose
// slots are delivered again) or by another leader, and moves seenTo to
// the end.
func (s *Service) scanDeliveries(from int64) error {
	cl := s.store.CommitLog()
	end, fileSize := cl.MaxOffset(), cl.FileSize()
	defer func() { s.seenTo = max(s.seenTo, end) }()
	for off := max(from, cl.MinOffset()); off < end; {
		m, err := s.store.LookMessageByOffset(off)
		if err != nil || m.StoreSize <= 0 {
			off = (off/fileSize + 1) * fileSize // a file's blank end
			continue
		}
		s.scanned++
		if v, ok := m.Properties[record.PropertyTimerSourceOffset]; ok {
			src, perr := strconv.ParseInt(v, 10, 64)
			if _, ok := s.delivered[src]; perr == nil && !ok {
				s.delivered[src] = off
			}
		}
		off += int64(m.StoreSize)
	}
	return nil
}
