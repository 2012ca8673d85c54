package timer

import (
	"fmt"
	"maps"

	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/record"
)

// saveJob is a checkpoint in flight: the state as the service goroutine
// snapshot it, written by a goroutine of its own while delivery goes on
// (a checkpoint syncs three files and the CommitLog: hundreds of ms on a
// busy disk, which would make every slot behind it late).
type saveJob struct {
	ck    checkpoint
	redo  []record.TimerSlot
	syncs []logSync
	dirs  bool // the TimerLog directory has new files to sync
	done  chan error
}

// startCheckpoint snapshots the state and starts writing it. The caller
// is the service goroutine, with no checkpoint in flight.
func (s *Service) startCheckpoint() {
	// The next recovery reads the CommitLog for deliveries from here:
	// every delivery before it is of a slot before the read time. Those
	// still to be skipped must be found again (the scan starts at the
	// first of them, or stays when a put of the slot in progress is
	// among them), and a replica on standby has read the leader's only
	// up to seenTo; every later delivery of this service lands past the
	// CommitLog's end.
	scanFrom := s.store.CommitLog().MaxOffset()
	if s.standby {
		scanFrom = min(scanFrom, s.seenTo)
	}
	for _, pos := range s.delivered {
		if pos < 0 {
			scanFrom = s.st.scanFrom
			break
		}
		scanFrom = min(scanFrom, pos)
	}
	redo := s.wheel.detach()
	syncs, dirs := s.log.unsynced()
	j := &saveJob{redo: redo, syncs: syncs, dirs: dirs, done: make(chan error, 1),
		ck: checkpoint{QueueOffset: s.st.queueOffset, ReadTimeMs: s.st.readTime, LogEnd: s.log.end, ScanFrom: scanFrom,
			PrecisionMs: s.cfg.PrecisionMs, Slots: s.wheel.slots, Redo: redoList(redo), FileMaxSlot: s.log.maxSlots(),
			Pending: maps.Clone(s.st.pending)}}
	s.saving = j
	s.lastCkpt, s.savedQueueOffset, s.savedPending = s.cfg.now(), s.st.queueOffset, s.pendingTotal()
	go func() { j.done <- s.write(j) }()
}

// write makes the checkpoint durable, in this order: the deliveries it
// counts (the CommitLog), the TimerLog units its slots point at, the
// checkpoint with its redo list, and only then the slots in the wheel
// file. It touches no state of the service goroutine.
func (s *Service) write(j *saveJob) error {
	if !s.cfg.broken.NoDeliverySync {
		if err := s.store.FlushCommitLog(0); err != nil {
			return fmt.Errorf("timer: checkpoint: sync the deliveries first: %w", err)
		}
	}
	if err := s.log.sync(j.syncs, j.dirs); err != nil {
		return fmt.Errorf("timer: checkpoint: sync the TimerLog: %w", err)
	}
	if s.cfg.broken.WheelInPlace {
		if err := s.wheel.apply(j.redo); err != nil {
			return err
		}
	}
	if err := configfile.Save(s.fs, checkpointFile, j.ck); err != nil {
		return fmt.Errorf("timer: checkpoint: %w", err)
	}
	if err := s.wheel.apply(j.redo); err != nil {
		return fmt.Errorf("timer: checkpoint: write the wheel: %w", err)
	}
	return nil
}

// finishCheckpoint waits for the checkpoint in flight (if wait, or if it
// is done) and takes its result: the slots leave memory, the delivered
// TimerLog files go. A failed checkpoint's slots stay for the next one.
func (s *Service) finishCheckpoint(wait bool) error {
	j := s.saving
	if j == nil {
		return nil
	}
	var err error
	if wait {
		err = <-j.done
	} else {
		select {
		case err = <-j.done:
		default:
			return nil
		}
	}
	s.saving = nil
	s.wheel.saved(err == nil)
	if err != nil {
		s.savedQueueOffset = -1 // not saved: an idle service saves again
		return err
	}
	s.log.synced = max(s.log.synced, j.ck.LogEnd)
	s.st.scanFrom = j.ck.ScanFrom
	return s.log.deleteDelivered(j.ck.ReadTimeMs)
}

// Checkpoint saves the timer state now and waits until it is durable
// (the service goroutine saves it every CheckpointInterval without
// waiting). In Manual mode the owner calls it.
func (s *Service) Checkpoint() error {
	if s.store == nil || s.log == nil {
		return ErrClosed
	}
	if err := s.finishCheckpoint(true); err != nil {
		s.cfg.Logger.Warn("timer: checkpoint failed; taking another", "err", err)
	}
	s.startCheckpoint()
	return s.finishCheckpoint(true)
}
