package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rocketstore/rocketstore/record"
)

// RecoveryReport says what Open found and did.
type RecoveryReport struct {
	// Abnormal is set when the abort marker was present: the store was not
	// closed cleanly (crash, kill, power cut).
	Abnormal bool
	// CheckpointValid is false when the checkpoint was missing or garbage;
	// recovery then replays the CommitLog from its first file.
	CheckpointValid bool
	// ScanFrom is the CommitLog offset recovery started checking records at.
	ScanFrom int64
	// CommitLogEnd is the recovered end of the CommitLog.
	CommitLogEnd int64
	// StopReason says why the scan stopped at CommitLogEnd: nil for the
	// clean end of the data (zero bytes), else the first bad record.
	StopReason error
	// DroppedBytes counts the non-zero bytes past CommitLogEnd that were
	// zeroed (a torn or corrupt tail).
	DroppedBytes int
	// Redispatched counts records replayed into the ConsumeQueues.
	Redispatched int
	// PaddedFiles lists last files that were shorter than the file size
	// (truncated) and were padded with zeros before recovery.
	PaddedFiles []string
	// ConsumeQueuesRebuilt is set when the ConsumeQueues were inconsistent
	// with the CommitLog and were rebuilt from it entirely.
	ConsumeQueuesRebuilt bool
	// Damaged lists the damaged CommitLog ranges that recovery kept in
	// place and skipped (nothing in them is dispatched) because intact
	// records follow them; see recoverdamage.go.
	Damaged []DamagedRange
	// TruncatedAtDamage is set when recovery could not tell damage from a
	// torn tail and, as the config allowed, cut the CommitLog there.
	TruncatedAtDamage bool

	// revivedHead holds all-zero head files skipped by the scan.
	revivedHead []DamagedRange
	// unitSuspects and cutTails are the damaged units a clean start
	// found (unitstartup.go), repaired once the replay has run.
	unitSuspects []queueIndex
	cutTails     []cutTail
	// lastStoreTimestamp is the store time of the last record the scan
	// checked (0: none).
	lastStoreTimestamp int64
}

// LogValue logs the report as key-value pairs instead of a Go struct.
func (r RecoveryReport) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Bool("abnormal", r.Abnormal), slog.Bool("checkpointValid", r.CheckpointValid),
		slog.Int64("scanFrom", r.ScanFrom), slog.Int64("commitLogEnd", r.CommitLogEnd),
		slog.Int("redispatched", r.Redispatched), slog.Bool("consumeQueuesRebuilt", r.ConsumeQueuesRebuilt)}
	if r.StopReason != nil {
		attrs = append(attrs, slog.String("stopReason", r.StopReason.Error()), slog.Int("droppedBytes", r.DroppedBytes))
	}
	if len(r.PaddedFiles) > 0 {
		attrs = append(attrs, slog.Any("paddedFiles", r.PaddedFiles))
	}
	if len(r.Damaged) > 0 {
		attrs = append(attrs, slog.Int("damagedRecords", len(r.Damaged)))
	}
	if r.TruncatedAtDamage {
		attrs = append(attrs, slog.Bool("truncatedAtDamage", true))
	}
	return slog.GroupValue(attrs...)
}

// recover brings the CommitLog and ConsumeQueues to a consistent state:
// RocketMQ's load + recover + recoverTopicQueueTable, plus the
// PHYSICALOFFSET check and tail zeroing of our choices table.
func (s *Store) recover(lastExitOK, cpValid bool) error {
	r := &s.recovery
	r.Abnormal, r.CheckpointValid = !lastExitOK, cpValid
	r.PaddedFiles = append(r.PaddedFiles, s.commitLog.q.padded...)
	s.queues.all(func(cq *consumeQueue) error {
		r.PaddedFiles = append(r.PaddedFiles, cq.q.padded...)
		return nil
	})
	if len(r.PaddedFiles) > 0 {
		s.cfg.Logger.Warn("short last files padded to the file size", "files", r.PaddedFiles)
	}
	if err := s.queues.all(func(cq *consumeQueue) error {
		if lastExitOK && !s.cfg.hooks.NoStartupUnitCheck {
			return cq.recoverAfterCleanExit()
		}
		return cq.recover()
	}); err != nil {
		return err
	}
	files := s.commitLog.q.snapshot()
	if len(files) == 0 {
		// Without a CommitLog the queues point at nothing.
		return s.rebuildConsumeQueues()
	}
	start := max(0, len(files)-3)
	if !lastExitOK {
		start = s.abnormalStartFile(files)
	}
	r.ScanFrom = files[start].fileFromOffset
	if !lastExitOK {
		// After a crash, units for records from the scan start may be
		// torn: cut the queues there, and the scan rebuilds them.
		// A store of replicated records keeps no unit past the commit
		// point given at open.
		cut := s.commitLog.recoveryLimit(r.ScanFrom)
		if err := s.queues.all(func(cq *consumeQueue) error {
			return cq.truncateDirtyLogicFiles(cut, s.unitCheck(cq))
		}); err != nil {
			return err
		}
	}
	if !lastExitOK {
		s.beginUnitStaging()
	}
	end, stop, dispatchErr := s.scanCommitLog(files[start:], !lastExitOK)
	if err := s.endUnitStaging(); err != nil && dispatchErr == nil {
		// Units the scan dispatched are missing: rebuild as after any
		// dispatch failure (or fail on the same write error).
		dispatchErr = err
	}
	if errors.Is(stop, record.ErrUnsupportedVersion) {
		return fmt.Errorf("%w: commitlog offset %d: %w", ErrCorruptStore, end, stop)
	}
	if errors.Is(stop, ErrUndecidableDamage) {
		return stop
	}
	s.recordDamage()
	if !errors.Is(stop, record.ErrNoRecord) {
		r.StopReason = stop
	}
	r.CommitLogEnd = end
	if err := s.truncateCommitLog(end); err != nil {
		return err
	}
	s.clampCommitPoint(end)
	if s.rebuildPending() {
		// A rebuild was cut short: the queues may lack units the
		// checkpoint vouches for (rebuildintent.go).
		return s.rebuildConsumeQueues()
	}
	if !lastExitOK {
		if dispatchErr != nil {
			s.cfg.Logger.Warn("consume queues inconsistent with the commitlog; rebuilding them", "err", dispatchErr)
			return s.rebuildConsumeQueues()
		}
		s.reput.SetReputFrom(s.commitLog.recoveryLimit(end))
		return s.recoverTopicQueueTable()
	}
	// Units for records past the end (in a store of replicated records,
	// past the commit point) are gone; damaged units are found
	// (unitstartup.go).
	visible := s.commitLog.recoveryLimit(end)
	if err := s.queues.all(func(cq *consumeQueue) error {
		if s.cfg.hooks.NoStartupUnitCheck {
			return cq.truncateDirtyLogicFiles(visible, nil)
		}
		return s.checkUnitsAfterCleanExit(cq, visible)
	}); err != nil {
		return err
	}
	if err := s.redispatch(); err != nil {
		return err
	}
	return s.repairStartupDamage()
}

// rewriteCheckpoint replaces a missing or garbage checkpoint once recovery
// has made the CommitLog and the ConsumeQueues agree up to the recovered
// end: both timestamps become the last record's store time, the queues are
// synced first (the checkpoint never claims more than they hold), and the
// index timestamp stays 0 (the broker's index decides on its own files).
func (s *Store) rewriteCheckpoint() error {
	ts := s.recovery.lastStoreTimestamp
	if ts <= 0 {
		return nil // no record: nothing to vouch for
	}
	s.checkpoint.setPhysic(ts)
	s.checkpoint.setLogics(ts)
	return s.flushConsumeQueues(0)
}

// abnormalStartFile returns the index of the last file whose first record
// is older than the checkpoint's minimum timestamp: everything before it is
// known to be durable in the CommitLog and the ConsumeQueues.
func (s *Store) abnormalStartFile(files []*mappedFile) int {
	minTs := s.checkpoint.MinTimestamp()
	for i := len(files) - 1; i >= 0; i-- {
		mf := files[i]
		info, err := record.Check(mf.seg.View(0, mf.fileSize), mf.fileFromOffset, false)
		if err == nil && !info.Blank && info.StoreTimestamp != 0 && info.StoreTimestamp <= minTs {
			return i
		}
	}
	return 0
}

// scanCommitLog checks records (with CRC unless disabled) from the start of
// files[0] and returns the offset after the last good one and why it
// stopped there. A damaged record with intact records after it is skipped
// or refused (see onDamage), never a reason to drop what follows.
func (s *Store) scanCommitLog(files []*mappedFile, dispatch bool) (end int64, stop, dispatchErr error) {
	checkCRC := !s.cfg.SkipCRCOnRecover && !s.cfg.hooks.NoCRCCheck
	resume := int64(-1)
	// One request for the whole scan: dispatching takes its address, so a
	// request per record would be a heap allocation per record.
	var one [1]dispatchRequest
	// redispatch dispatches records the scan validated. After a dispatch
	// failure the queues are rebuilt anyway, so only the scan goes on.
	redispatch := func(reqs []dispatchRequest, same []bool) {
		if dispatch && dispatchErr == nil {
			reqs, same = s.commitLog.belowCommit(reqs, same)
			var n int
			n, dispatchErr = s.dispatchRecovered(reqs, same)
			s.recovery.Redispatched += n
		}
	}
	var ahead *parseAhead // records of the current file, checked beside the walk
	defer func() { ahead.close() }()
	for i := 0; i < len(files); i++ {
		mf := files[i]
		b := mf.seg.View(0, mf.fileSize)
		pos := int64(0)
		if resume > mf.fileFromOffset {
			pos = resume - mf.fileFromOffset
		}
		ahead.close()
		ahead = s.startParseAhead(mf, pos, checkCRC)
		restarts := 0
		for {
			if reqs, same := ahead.take(pos); len(reqs) > 0 {
				// Checked by the parsers, in order from pos.
				redispatch(reqs, same)
				last := &reqs[len(reqs)-1]
				s.recovery.lastStoreTimestamp = last.StoreTimestamp
				pos = last.CommitLogOffset - mf.fileFromOffset + int64(last.MsgSize)
				continue
			}
			if ahead.guessedWrong() && restarts < maxParseAheadRestarts {
				// The parsers lost the chain: start them again from
				// the scan's position.
				restarts++
				ahead.close()
				ahead = s.startParseAhead(mf, pos, checkCRC)
				continue
			}
			req, size, blank, err := s.parser.Parse(b[pos:], mf.fileFromOffset+pos, checkCRC)
			if err == nil && blank && pos+int64(size) != mf.fileSize {
				err = fmt.Errorf("%w: blank record of %d bytes does not end the file", record.ErrCorrupt, size)
			}
			if err != nil {
				stop := fmt.Errorf("%s at %d: %w", mf.name, pos, err)
				if errors.Is(err, record.ErrUnsupportedVersion) || s.cfg.hooks.TruncateAtDamage {
					return mf.fileFromOffset + pos, stop, dispatchErr
				}
				next, truncate, derr := s.onDamage(files, i, pos, err)
				if derr != nil {
					return mf.fileFromOffset + pos, derr, dispatchErr
				}
				if truncate {
					return mf.fileFromOffset + pos, stop, dispatchErr
				}
				if next < mf.fileFromOffset+mf.fileSize {
					// Resynchronised past the damage: parse ahead
					// again from there.
					pos = next - mf.fileFromOffset
					ahead.close()
					ahead = s.startParseAhead(mf, pos, checkCRC)
					continue
				}
				resume = next
				for i+1 < len(files) && files[i+1].fileFromOffset+files[i+1].fileSize <= next {
					i++
				}
				break
			}
			if !blank {
				one[0] = req
				s.recovery.lastStoreTimestamp = req.StoreTimestamp
				redispatch(one[:], nil)
				pos += int64(size)
				continue
			}
			if i == len(files)-1 {
				return mf.fileFromOffset + mf.fileSize, nil, dispatchErr
			}
			break
		}
	}
	last := files[len(files)-1]
	return last.fileFromOffset + last.fileSize, nil, dispatchErr
}

// maxParseAheadRestarts bounds how often the parsers of one file start
// again after losing the chain of records (see parseAhead): each start
// makes progress, this only keeps a pathological file from costing a
// start per region.
const maxParseAheadRestarts = 16

// truncateCommitLog cuts the CommitLog at end, logging what was dropped.
func (s *Store) truncateCommitLog(end int64) error {
	q := s.commitLog.q
	if mf := q.findMappedFileByOffset(end, false); mf != nil {
		s.recovery.DroppedBytes = countNonZero(mf.seg.View(end-mf.fileFromOffset, mf.fileSize-(end-mf.fileFromOffset)))
	}
	for _, mf := range q.snapshot() {
		if mf.fileFromOffset > end {
			s.recovery.DroppedBytes += countNonZero(mf.seg.View(0, mf.fileSize))
		}
	}
	if s.recovery.StopReason != nil || s.recovery.DroppedBytes > 0 {
		s.cfg.Logger.Warn("commitlog truncated at the first bad record",
			"offset", end, "reason", s.recovery.StopReason, "droppedNonZeroBytes", s.recovery.DroppedBytes)
	}
	if err := q.truncateDirtyFiles(end); err != nil {
		return err
	}
	if s.recovery.Abnormal && !s.cfg.hooks.NoRecoverySync {
		// After a kill the recovered records may exist only in the page
		// cache; they are reported as flushed from now on, so sync them
		// (msync of pages that are already clean costs little). Before
		// ScanFrom everything is durable: the checkpoint says so.
		if err := s.syncRange(s.recovery.ScanFrom, end); err != nil {
			return err
		}
	}
	q.setFlushedWhere(end)
	return nil
}

// syncRange syncs CommitLog offsets [from, to).
func (s *Store) syncRange(from, to int64) error {
	for _, mf := range s.commitLog.q.snapshot() {
		lo := max(from, mf.fileFromOffset) - mf.fileFromOffset
		hi := min(to, mf.fileFromOffset+mf.fileSize) - mf.fileFromOffset
		if lo >= hi {
			continue
		}
		if err := mf.seg.Sync(lo, hi-lo); err != nil {
			return fmt.Errorf("%w: sync recovered %s [%d,%d): %w", ErrFlushFailed, mf.name, lo, hi, err)
		}
	}
	return nil
}

// countNonZero counts the non-zero bytes of b. The tail past a recovered
// end is almost always zero, so whole zero pages are skipped word by word
// and only the rest is counted byte by byte.
func countNonZero(b []byte) int {
	n := 0
	for len(b) > 0 {
		page := b[:min(len(b), osPageSize)]
		b = b[len(page):]
		if allZero(page) {
			continue
		}
		for _, c := range page {
			if c != 0 {
				n++
			}
		}
	}
	return n
}

// redispatch replays the CommitLog into the ConsumeQueues from the largest
// CommitLog end any queue holds (RocketMQ 4.5+'s reput start), rebuilding
// every queue if one turns out inconsistent. It then rebuilds the
// queue-offset table and the queues' minimum offsets.
func (s *Store) redispatch() error {
	from := s.recovery.ScanFrom
	if !s.recovery.Abnormal {
		from = s.commitLog.MinOffset()
		s.queues.all(func(cq *consumeQueue) error {
			from = max(from, cq.MaxPhysicOffset())
			return nil
		})
		from = s.replayFromCutTails(min(from, s.commitLog.recoveryLimit(s.recovery.CommitLogEnd)))
	}
	s.reput.SetReputFrom(from)
	n, err := s.reput.DoReput()
	s.recovery.Redispatched += n
	if err != nil {
		// A queue that does not line up with the CommitLog (a gap, or a
		// reput start inside a record) is rebuilt rather than trusted.
		s.cfg.Logger.Warn("consume queues inconsistent with the commitlog; rebuilding them", "err", err)
		return s.rebuildConsumeQueues()
	}
	return s.recoverTopicQueueTable()
}

// rebuildConsumeQueues deletes every ConsumeQueue and replays the whole
// CommitLog into new ones.
func (s *Store) rebuildConsumeQueues() error {
	s.recovery.ConsumeQueuesRebuilt = true
	expired, err := s.beginRebuild()
	if err != nil {
		return err
	}
	if err := s.queues.all(func(cq *consumeQueue) error { return cq.q.destroy() }); err != nil {
		return err
	}
	s.queues.m.Store(nil)
	if err := s.fs.RemoveAll(consumeQueueDir); err != nil {
		return fmt.Errorf("remove %s: %w", consumeQueueDir, err)
	}
	s.reput.SetReputFrom(s.commitLog.MinOffset())
	n, err := s.reput.DoReput()
	s.recovery.Redispatched += n
	if err != nil {
		return err
	}
	if err := s.keepExpiredQueueOffsets(expired); err != nil {
		return err
	}
	// The old queues' removal may become durable with any directory
	// sync from here on (a sibling's), so the new queues' directories
	// must be durable now: with the old queue gone and the new one's
	// entry lost, a power cut would leave the queue absent while the
	// checkpoint vouches for its units (creation defers these syncs).
	if err := s.queues.all(func(cq *consumeQueue) error { return cq.q.syncDirs() }); err != nil {
		return err
	}
	if err := s.endRebuild(); err != nil {
		return err
	}
	return s.recoverTopicQueueTable()
}

// expiredTail is the last unit of a queue whose last record is below the
// CommitLog's minimum (retention deleted it).
type expiredTail struct {
	topic   string
	queueID int32
	index   int64
	unit    Unit
}

// expiredQueueTails lists, before a rebuild destroys the ConsumeQueues,
// the queues whose last unit points below the CommitLog's minimum: a
// replay of the CommitLog gives them no record, so without their tail they
// would come back empty and hand their queue offsets out again.
func (s *Store) expiredQueueTails() []expiredTail {
	minPhy := s.commitLog.MinOffset()
	var tails []expiredTail
	s.queues.all(func(cq *consumeQueue) error {
		last := cq.MaxOffsetInQueue() - 1
		if last < 0 {
			return nil
		}
		if u, ok := cq.UnitAt(last); ok && u != blankUnit && u.CommitLogOffset+int64(u.Size) <= minPhy {
			tails = append(tails, expiredTail{cq.topic, cq.queueID, last, u})
		}
		return nil
	})
	return tails
}

// keepExpiredQueueOffsets writes back the last unit of each queue the
// rebuild left short of it (blank units before it, as a queue whose first
// file starts late): it points below the CommitLog's minimum, so no
// consumer reads it, and the queue's next offset stays where it was, as
// normal retention, which never deletes a queue's last file, keeps it.
func (s *Store) keepExpiredQueueOffsets(tails []expiredTail) error {
	for _, t := range tails {
		// Only a queue the replay left empty: one that got records back
		// has its offsets from their own QUEUEOFFSET fields, and a unit
		// past its end would leave a gap.
		if cq := s.queues.find(t.topic, t.queueID); cq != nil && cq.MaxOffsetInQueue() > 0 {
			continue
		}
		if err := s.keepQueueOffset([]byte(t.topic), t.queueID, t.index, t.unit, slog.LevelWarn,
			"rebuilt consume queue keeps the offset of its expired messages", "nextOffset", t.index+1); err != nil {
			return err
		}
	}
	return nil
}

// keepQueueOffset writes unit u, which no consumer reads (it points below
// the CommitLog minimum, or into a damaged range), at index of the queue,
// creating the queue if needed, so that the queue's next offset stays past
// index; then it logs msg at level with the queue and attrs.
func (s *Store) keepQueueOffset(topic []byte, queueID int32, index int64, u Unit, level slog.Level, msg string, attrs ...any) error {
	cq, err := s.queues.findOrCreate(s, topic, queueID)
	if err != nil {
		return err
	}
	if _, err := cq.putMessagePositionInfo(u.CommitLogOffset, u.Size, u.TagsCode, index); err != nil {
		return err
	}
	s.cfg.Logger.Log(context.Background(), level, msg, append([]any{"topic", cq.topic, "queueId", cq.queueID}, attrs...)...)
	return nil
}

// recoverTopicQueueTable sets each queue's next offset from its
// ConsumeQueue and each queue's minimum from the CommitLog's minimum,
// after keeping the queue offsets of damaged records (damagedtail.go).
func (s *Store) recoverTopicQueueTable() error {
	if len(s.recovery.Damaged) > 0 {
		if err := s.keepDamagedQueueOffsets(); err != nil {
			return err
		}
	}
	t := make(map[topicQueueKey]int64)
	minPhy := s.commitLog.MinOffset()
	s.queues.all(func(cq *consumeQueue) error {
		t[topicQueueKey{cq.topic, cq.queueID}] = cq.MaxOffsetInQueue()
		cq.correctMinOffset(minPhy)
		return nil
	})
	if s.commitLog.rec.on {
		s.recoverRecords(t)
	}
	s.commitLog.setTopicQueueTable(t)
	return nil
}
