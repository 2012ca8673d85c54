package engine

import "github.com/rocketstore/rocketstore/record"

// unitChecker is the check that recovery applies, after an abnormal exit,
// to the units it keeps (see truncateAfterCrash).
type unitChecker struct {
	s  *Store
	cq *consumeQueue
}

// unitCheck returns, after an abnormal exit, the check that recovery applies
// to the kept units of cq; after a clean exit every unit was synced by
// Close, and nil is returned.
func (s *Store) unitCheck(cq *consumeQueue) *unitChecker {
	if !s.recovery.Abnormal {
		return nil
	}
	return &unitChecker{s: s, cq: cq}
}

// ok reports whether unit u at index may be kept: it points at the record
// it indexes (same size, topic, queue and queue offset), or at a damaged
// range (a placeholder), or below the CommitLog minimum (its record
// deleted by retention), where it cannot be checked.
func (c *unitChecker) ok(u Unit, index int64) bool {
	if u.CommitLogOffset < c.s.commitLog.MinOffset() {
		return true
	}
	return c.verified(u, index)
}

// verified reports whether u at index points at the record it indexes, or
// at a damaged range: a unit no freed block of another file can fake.
func (c *unitChecker) verified(u Unit, index int64) bool {
	s, cq := c.s, c.cq
	if u.CommitLogOffset < s.commitLog.MinOffset() {
		return false
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
		info.QueueOffset == index && string(info.Topic) == cq.topic && !s.deletedBelow(info.Topic, u.CommitLogOffset)
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
