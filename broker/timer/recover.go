package timer

import (
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/broker/configfile"
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
		now := s.cfg.Now()
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
	s.delivered = map[int64]bool{}
	if !s.cfg.broken.NoDedup {
		if err := s.scanDeliveries(ck.ScanFrom); err != nil {
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

// scanDeliveries reads the CommitLog from from to its end for delivered
// timer messages (TIMER_SOURCE_OFFSET): they were made after the
// checkpoint, whose slots are delivered again.
func (s *Service) scanDeliveries(from int64) error {
	cl := s.store.CommitLog()
	end, fileSize := cl.MaxOffset(), cl.FileSize()
	for off := max(from, cl.MinOffset()); off < end; {
		m, err := s.store.LookMessageByOffset(off)
		if err != nil || m.StoreSize <= 0 {
			off = (off/fileSize + 1) * fileSize // a file's blank end
			continue
		}
		if v, ok := m.Properties[record.PropertyTimerSourceOffset]; ok {
			src, perr := strconv.ParseInt(v, 10, 64)
			if perr == nil {
				s.delivered[src] = true
			}
		}
		off += int64(m.StoreSize)
	}
	return nil
}

// Checkpoint saves the timer state (see the package doc for the order of
// its steps) and deletes the TimerLog files that only hold delivered
// slots.
func (s *Service) Checkpoint() error {
	if s.store == nil || s.log == nil {
		return ErrClosed
	}
	// Every delivery after this point lands past it. Deliveries that
	// recovery found and that are still to be skipped must be found
	// again after another crash: the scan start stays.
	scanFrom := s.store.CommitLog().MaxOffset()
	if len(s.delivered) > 0 {
		scanFrom = s.st.scanFrom
	}
	if !s.cfg.broken.NoDeliverySync {
		if err := s.store.FlushCommitLog(0); err != nil {
			return fmt.Errorf("timer: checkpoint: sync the deliveries first: %w", err)
		}
	}
	if err := s.log.sync(); err != nil {
		return fmt.Errorf("timer: checkpoint: sync the TimerLog: %w", err)
	}
	redo := s.wheel.redo()
	if s.cfg.broken.WheelInPlace {
		if err := s.wheel.apply(redo); err != nil {
			return err
		}
	}
	ck := checkpoint{QueueOffset: s.st.queueOffset, ReadTimeMs: s.st.readTime, LogEnd: s.log.end, ScanFrom: scanFrom,
		PrecisionMs: s.cfg.PrecisionMs, Slots: s.wheel.slots, Redo: redoList(redo), FileMaxSlot: s.log.maxSlots(), Pending: s.st.pending}
	if err := configfile.Save(s.fs, checkpointFile, ck); err != nil {
		return fmt.Errorf("timer: checkpoint: %w", err)
	}
	if err := s.wheel.apply(redo); err != nil {
		return fmt.Errorf("timer: checkpoint: write the wheel: %w", err)
	}
	clear(s.wheel.dirty)
	s.st.scanFrom = scanFrom
	s.lastCkpt = s.cfg.Now()
	return s.log.deleteDelivered(s.st.readTime)
}
