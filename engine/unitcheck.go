package engine

import "github.com/rocketstore/rocketstore/engine/record"

// unitCheck returns, after an abnormal exit, the check that recovery applies
// to the kept tail units of cq (see truncateDirtyLogicFiles): a unit must
// point at the record it indexes (same size, topic, queue and queue
// offset). A unit pointing below the CommitLog minimum (its record deleted
// by retention) cannot be checked and is kept. After a clean exit every
// unit was synced by Close, and nil is returned.
func (s *Store) unitCheck(cq *ConsumeQueue) func(Unit, int64) bool {
	if !s.recovery.Abnormal {
		return nil
	}
	return func(u Unit, index int64) bool {
		if u.CommitLogOffset < s.commitLog.MinOffset() {
			return true
		}
		b, mf := s.commitLog.recordAt(u.CommitLogOffset)
		if b == nil {
			return false
		}
		defer mf.release()
		info, err := record.Check(b, u.CommitLogOffset, false)
		return err == nil && !info.Blank && info.Size == u.Size && info.QueueID == cq.queueID &&
			info.QueueOffset == index && string(info.Topic) == cq.topic
	}
}
