package engine

import "fmt"

// After a clean exit Close synced every unit, so nothing in a ConsumeQueue
// can be torn: a unit that is not a unit (a negative or huge offset or
// size, a record past the CommitLog's end, a unit pointing before the one
// before it) is damage done while the store was stopped, not the queue's
// end. RocketMQ ends a queue at its first such unit; that drops every
// acknowledged message after it, and the next put reuses their offsets. So
// a clean start ends each queue at its last non-zero unit, and then checks
// what recovery reads anyway (the last three files) without a CommitLog
// read per unit: units must be valid, end at or before the CommitLog's end
// and point past the unit before them. A unit that fails is repaired from
// the CommitLog before Open returns (repairUnits: logged at ERROR,
// counted); a unit that passes but is not its queue's (another queue's
// record) is found by the read path's check on its first read. The last
// unit of each queue is checked against its record, so that garbage past
// the end, or over the last units, does not become the queue's end: those
// units are cut, and the replay from the CommitLog that follows a clean
// start restores the ones whose records it holds.

// queueIndex names one unit of a queue.
type queueIndex struct {
	cq    *consumeQueue
	index int64
}

// cutTail is a queue whose last units did not match their records after a
// clean exit: they were cut at index cut (dropped units; garbage of them
// were not units for the CommitLog's records at all), and the replay
// restores those whose records the CommitLog holds.
type cutTail struct {
	cq               *consumeQueue
	cut              int64
	dropped, garbage int64
	maxPhy           int64
}

// recoverAfterCleanExit is consumeQueue.recover after a clean exit: every
// file but the last is full, and the queue ends after the last non-zero
// unit of the last file. Units are checked later, by checkUnitsAfterCleanExit.
func (cq *consumeQueue) recoverAfterCleanExit() error {
	files := cq.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	last := files[len(files)-1]
	b := last.seg.View(0, last.fileSize)
	pos := int64(len(b)) / CQUnitSize * CQUnitSize
	for pos > 0 && countNonZero(b[pos-CQUnitSize:pos]) == 0 {
		pos -= CQUnitSize
	}
	end := last.fileFromOffset + pos
	cq.q.setFlushedWhere(end)
	return cq.q.truncateDirtyFiles(end)
}

// checkUnitsAfterCleanExit is truncateDirtyLogicFiles after a clean exit:
// it walks the units of the queue's last three files, remembers the first
// unit of each run that fails the structural checks for repair once the
// store is recovered (s.recovery.unitSuspects), and cuts the units at the
// end that do not match their records (phy is the recovered CommitLog end).
func (s *Store) checkUnitsAfterCleanExit(cq *consumeQueue, phy int64) error {
	files := cq.q.snapshot()
	if len(files) == 0 {
		cq.maxPhysicOffset.Store(-1)
		return nil
	}
	first := max(0, len(files)-3)
	from := files[first].fileFromOffset / CQUnitSize
	prevEnd := cq.prevMaxPhysicOffset(files[first])
	good := from - 1 // the last unit that passed; below from: none seen
	inRun := false
	for _, mf := range files[first:] {
		b := mf.seg.View(0, mf.wrote.Load())
		for pos := int64(0); pos+CQUnitSize <= int64(len(b)); pos += CQUnitSize {
			index := (mf.fileFromOffset + pos) / CQUnitSize
			u := DecodeUnit(b[pos:])
			var ok bool
			switch end := u.CommitLogOffset + int64(u.Size); {
			case u == blankUnit:
				ok = prevEnd < 0 // blank fillers only precede a queue's first unit
			case !u.valid() || end > phy:
			case u.CommitLogOffset >= prevEnd:
				ok = true
			default:
				// It points before the unit before it: one of the two
				// is not its queue's; the records say which.
				ok = s.unitOK(cq, index)
				if ok && good >= from && !inRun && !s.unitOK(cq, good) {
					s.recovery.unitSuspects = append(s.recovery.unitSuspects, queueIndex{cq, good})
				}
			}
			switch {
			case ok:
				if u != blankUnit {
					prevEnd = u.CommitLogOffset + int64(u.Size)
				}
				good, inRun = index, false
			case !inRun:
				s.recovery.unitSuspects = append(s.recovery.unitSuspects, queueIndex{cq, index})
				inRun = true
			}
		}
	}
	return s.cutUnmatchedTail(cq, from, good+1, phy)
}

// cutUnmatchedTail cuts cq after the last unit at or below cut-1 that
// matches its record (or is a blank filler, or a unit below from, which
// this start did not read), and remembers the cut for the replay.
func (s *Store) cutUnmatchedTail(cq *consumeQueue, from, cut, phy int64) error {
	for cut > from {
		if u, ok := cq.UnitAt(cut - 1); ok && (u == blankUnit || s.unitOK(cq, cut-1)) {
			break
		}
		cut--
	}
	end := cq.MaxOffsetInQueue()
	maxPhy := cq.endBefore(cut)
	if cut == end {
		cq.maxPhysicOffset.Store(maxPhy)
		return cq.dropEmptyLastFile()
	}
	t := cutTail{cq: cq, cut: cut, dropped: end - cut, maxPhy: maxPhy}
	logEnd := s.commitLog.q.MaxOffset()
	for i := cut; i < end; i++ {
		// A unit for a record the CommitLog lost at its tail points past
		// phy but into the CommitLog's files; anything else is garbage.
		if u, ok := cq.UnitAt(i); ok && !(u.valid() && u.CommitLogOffset+int64(u.Size) > phy && u.CommitLogOffset < logEnd) {
			t.garbage++
		}
	}
	s.recovery.cutTails = append(s.recovery.cutTails, t)
	return cq.cutAfterCrash(cut*CQUnitSize, maxPhy)
}

// endBefore returns the CommitLog end of the last unit before index i, or
// -1 when there is none (only blank fillers, or units retention removed).
func (cq *consumeQueue) endBefore(i int64) int64 {
	for i--; i >= 0; i-- {
		u, ok := cq.UnitAt(i)
		if !ok || u == blankUnit {
			return -1
		}
		if u.valid() {
			return u.CommitLogOffset + int64(u.Size)
		}
	}
	return -1
}

// replayFromCutTails lowers from, the clean start's replay start, to the
// CommitLog end of every queue cut by cutUnmatchedTail, so that the replay
// restores the cut units whose records the CommitLog holds.
func (s *Store) replayFromCutTails(from int64) int64 {
	for _, t := range s.recovery.cutTails {
		from = min(from, max(t.maxPhy, s.commitLog.MinOffset()))
	}
	return from
}

// repairStartupDamage reports the queues' cut tails and repairs the units
// that failed checkUnitsAfterCleanExit, once the replay has brought the
// queues up to the CommitLog's end. After a rebuild there is nothing left
// to repair: every queue was written anew.
func (s *Store) repairStartupDamage() error {
	if s.recovery.ConsumeQueuesRebuilt {
		return nil
	}
	r := &s.units
	for _, t := range s.recovery.cutTails {
		restored := min(t.dropped, max(0, t.cq.MaxOffsetInQueue()-t.cut))
		r.mismatches.Add(restored)
		r.repaired.Add(restored)
		if t.garbage == 0 && restored == 0 {
			continue // units for records lost at the CommitLog's tail
		}
		s.cfg.Logger.Error("consume queue: last units do not match their commitlog records; cut and replayed from the commitlog",
			"topic", t.cq.topic, "queueId", t.cq.queueID, "from", t.cut, "dropped", t.dropped, "notUnits", t.garbage, "restored", restored)
	}
	for _, q := range s.recovery.unitSuspects {
		if q.index >= q.cq.MaxOffsetInQueue() || s.unitOK(q.cq, q.index) {
			continue // cut, or repaired with an earlier suspect's run
		}
		if err := s.repairUnits(q.cq, q.index); err != nil {
			return fmt.Errorf("consume queue %s/%d: repair at start: %w", q.cq.topic, q.cq.queueID, err)
		}
	}
	s.recovery.cutTails, s.recovery.unitSuspects = nil, nil
	return nil
}
