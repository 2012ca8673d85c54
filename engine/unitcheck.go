package engine

import "github.com/rocketstore/rocketstore/engine/record"

// unitCheck returns, after an abnormal exit, the check that recovery applies
// to the kept tail units of cq (see truncateDirtyLogicFiles): a unit must
// point at the record it indexes (same size, topic, queue and queue
// offset). A unit pointing below the CommitLog minimum (its record deleted
// by retention) cannot be checked and is kept. After a clean exit every
// unit was synced by Close, and nil is returned.
func (s *Store) unitCheck(cq *consumeQueue) func(Unit, int64) bool {
	if !s.recovery.Abnormal {
		return nil
	}
	return func(u Unit, index int64) bool {
		if u.CommitLogOffset < s.commitLog.MinOffset() {
			return true
		}
		b, mf := s.commitLog.recordAt(u.CommitLogOffset)
		if b == nil {
			return s.pointsAtDamage(u)
		}
		defer mf.release()
		info, err := record.Check(b, u.CommitLogOffset, false)
		if err != nil {
			return s.pointsAtDamage(u)
		}
		return !info.Blank && info.Size == u.Size && info.QueueID == cq.queueID &&
			info.QueueOffset == index && string(info.Topic) == cq.topic
	}
}

// pointsAtDamage reports whether u is a unit made for a damaged record by
// fillDamagedUnits in an earlier run: no intact record at its offset, and
// an intact record (or the end of its file) right after it. A unit from a
// stale page points at an intact record, or not at a record boundary.
func (s *Store) pointsAtDamage(u Unit) bool {
	end := u.CommitLogOffset + int64(u.Size)
	mf := s.commitLog.q.findMappedFileByOffset(u.CommitLogOffset, false)
	if mf == nil {
		return false
	}
	if end == mf.fileFromOffset+mf.fileSize {
		return true
	}
	nb, nmf := s.commitLog.recordAt(end)
	if nb == nil {
		return false
	}
	defer nmf.release()
	_, err := record.Check(nb, end, true)
	return err == nil
}
