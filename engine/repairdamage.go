package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/record"
)

// ErrRepairRefused reports replacement bytes for damaged CommitLog ranges
// that repairDamaged would not write: missing, of the wrong length, or not
// a run of valid records covering the range exactly. It wraps
// ErrCorruptStore; nothing was written.
var ErrRepairRefused = fmt.Errorf("%w: damaged range repair refused", ErrCorruptStore)

// damageRepairs records which of the ranges recovery reported damaged have
// been rewritten since (engineops.Ops.RepairDamaged). GetMessage reads it without a lock.
type damageRepairs struct {
	mu   sync.Mutex // one RepairDamaged at a time
	done atomic.Pointer[map[int64]bool]
}

func (r *damageRepairs) repaired(off int64) bool {
	m := r.done.Load()
	return m != nil && (*m)[off]
}

// DamagedRanges returns the damaged ranges recovery reported
// (RecoveryReport.Damaged) that are not repaired yet, in CommitLog order.
// GetMessage hides their records.
func (s *Store) DamagedRanges() []DamagedRange {
	var out []DamagedRange
	for _, d := range s.recovery.Damaged {
		if !s.repairs.repaired(d.Offset) {
			out = append(out, d)
		}
	}
	return out
}

// repairDamaged rewrites every damaged range that DamagedRanges returns
// with the bytes a healthy copy of the same CommitLog holds there (a
// replica's: the records of a replicated group are byte-identical), then
// makes their records visible. fixes maps each range's Offset to its
// End-Offset bytes, which must be valid records (CRC, PHYSICALOFFSET)
// filling the range exactly (a BLANK record only where it ends its file).
// All ranges are repaired together or none is (ErrRepairRefused), for the
// reason given at fixUnits.
//
// The records recovery skipped were not dispatched, or were dispatched
// before the damage: each one's ConsumeQueue unit is checked and written
// where missing, at the record's own queue offset, and the other
// dispatchers (the message index) see it. The caller must not put new
// messages until this returns nil: recovery set each queue's next offset
// from its ConsumeQueue, which misses the skipped records at a queue's
// tail (a replicated node holds its Raft log until then).
func (s *Store) repairDamaged(fixes map[int64][]byte) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.repairs.mu.Lock()
	defer s.repairs.mu.Unlock()
	out := s.DamagedRanges()
	if len(out) == 0 {
		return nil
	}
	for _, d := range out {
		if err := s.checkFix(d, fixes[d.Offset]); err != nil {
			return err
		}
	}
	for _, d := range out {
		if err := s.writeFix(d.Offset, fixes[d.Offset]); err != nil {
			return err
		}
	}
	for _, d := range out {
		if !s.commitLog.committed(d.Offset) {
			continue // the dispatcher's, once committed (recordDamage)
		}
		if err := s.dispatchFix(d.Offset, fixes[d.Offset]); err != nil {
			return err
		}
	}
	s.retakeUncommitted(out)
	done := map[int64]bool{}
	if m := s.repairs.done.Load(); m != nil {
		for k := range *m {
			done[k] = true
		}
	}
	for _, d := range out {
		done[d.Offset] = true
		s.cfg.Logger.Warn("damaged commitlog range rewritten from a healthy copy; its records are delivered again",
			"file", d.File, "offset", d.Offset, "length", d.End-d.Offset, "damage", d.Reason)
	}
	s.repairs.done.Store(&done)
	return nil
}

// checkFix checks that b is a run of valid records filling d exactly.
func (s *Store) checkFix(d DamagedRange, b []byte) error {
	if int64(len(b)) != d.End-d.Offset {
		return fmt.Errorf("%w: %d bytes for the damaged range [%d,%d) of %s", ErrRepairRefused, len(b), d.Offset, d.End, d.File)
	}
	fileSize := s.commitLog.FileSize()
	for p := int64(0); p < int64(len(b)); {
		off := d.Offset + p
		info, err := record.Check(b[p:], off, true)
		if err != nil {
			return fmt.Errorf("%w: replacement record at %d: %w", ErrRepairRefused, off, err)
		}
		if info.Blank && (off+int64(info.Size))%fileSize != 0 {
			return fmt.Errorf("%w: replacement BLANK record at %d does not end its file", ErrRepairRefused, off)
		}
		p += int64(info.Size)
	}
	return nil
}

// writeFix writes b at CommitLog offset off, file by file, and syncs it.
func (s *Store) writeFix(off int64, b []byte) error {
	for len(b) > 0 {
		mf := s.commitLog.q.findMappedFileByOffset(off, false)
		if mf == nil || !mf.hold() {
			return fmt.Errorf("%w: repair at %d: offset not held", ErrRepairRefused, off)
		}
		pos := off - mf.fileFromOffset
		n := min(int64(len(b)), mf.fileSize-pos)
		err := error(nil)
		if pos+n > mf.wrote.Load() {
			err = fmt.Errorf("%w: repair at %d: %d bytes pass the published end of %s", ErrRepairRefused, off, n, mf.name)
		} else if _, err = mf.seg.WriteAt(b[:n], pos); err != nil {
			err = fmt.Errorf("repair %s at %d: %w", mf.name, pos, err)
		} else if err = mf.seg.Sync(pos, n); err != nil {
			err = fmt.Errorf("%w: sync repaired bytes in %s at %d: %w", ErrFlushFailed, mf.name, pos, err)
		}
		mf.release()
		if err != nil {
			return err
		}
		off, b = off+n, b[n:]
	}
	return nil
}

// dispatchFix dispatches the records of a repaired range in CommitLog
// order (see fixUnits).
func (s *Store) dispatchFix(off int64, b []byte) error {
	for p := int64(0); p < int64(len(b)); {
		req, size, blank, err := s.parser.Parse(b[p:], off+p, false)
		if err != nil {
			return fmt.Errorf("dispatch repaired record at %d: %w", off+p, err)
		}
		if !blank {
			if err := s.fixUnits(&req); err != nil {
				return fmt.Errorf("dispatch repaired record at %d: %w", off+p, err)
			}
		}
		p += int64(size)
	}
	return nil
}

// retakeUncommitted takes again, in a store of replicated records, the
// queue offsets of the records from the first repaired range at or past
// the commit point to the CommitLog's end: recovery took those of the
// uncommitted records (recoverRecords) only up to the first it could not
// parse, and a record it could not read had no queue offset to give.
func (s *Store) retakeUncommitted(repaired []DamagedRange) {
	c := s.commitLog
	if !c.rec.on {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	commit := c.rec.commit.Load()
	for _, d := range repaired {
		if d.End > commit {
			t := make(map[topicQueueKey]int64)
			s.takeQueueOffsets(t, max(d.Offset, commit), c.q.MaxOffset())
			for k, v := range t {
				*c.queueSlot(k) = v
			}
			return
		}
	}
}

// fixUnits puts the ConsumeQueue unit of a repaired record at its queue
// offset Q, which the record carries.
//
// Why in place and not by appending or rebuilding: a skipped record's
// queue offset was assigned when it was written, so the queue holds a
// gap-free sequence only if Q gets this record's unit. Recovery leaves one
// of three states: the unit is already right (the record was dispatched
// before the damage, e.g. a bit flipped at rest and a clean shutdown);
// the unit is a placeholder that fillDamagedUnits wrote so that the
// queue's later records kept their offsets (it points at a damaged range,
// possibly another record's when several are damaged, which is why every
// range is repaired in the same call: each placeholder sits at the queue
// offset of exactly one damaged record and is overwritten by its unit
// before any is made visible); or Q is the queue's end (the record was
// its queue's last), and the unit is appended, which also moves the
// queue's next offset past Q. Rebuilding the queues from the first
// repaired offset would be correct too, but would shrink live queues
// under consumers (OFFSET_OVERFLOW_BADLY) while it ran. A unit at Q that
// points at an intact record is never overwritten: that is an
// inconsistency, reported.
func (s *Store) fixUnits(req *dispatch.Request) error {
	if !req.Dispatchable() || s.deletedBelow(req.Topic, req.CommitLogOffset) {
		return s.dispatchExtra(req)
	}
	cq, err := s.queues.findOrCreate(s, req.Topic, req.QueueID)
	if err != nil {
		return err
	}
	q, end := req.ConsumeQueueOffset, cq.MaxOffsetInQueue()
	want := Unit{req.CommitLogOffset, req.MsgSize, req.TagsCode}
	switch {
	case q > end:
		return fmt.Errorf("%w: %w: consume queue %s/%d ends at %d, the repaired record has queue offset %d",
			ErrCorruptStore, errQueueGap, cq.topic, cq.queueID, end, q)
	case q == end:
		if err := s.buildConsumeQueue(req); err != nil {
			return err
		}
		s.commitLog.mu.Lock()
		if p := s.commitLog.queueSlot(topicQueueKey{cq.topic, cq.queueID}); *p < q+1 {
			*p = q + 1
		}
		s.commitLog.mu.Unlock()
	default:
		same, err := s.overwritePlaceholder(cq, q, want)
		if err != nil || same {
			return err // same: dispatched before the damage
		}
	}
	return s.dispatchExtra(req)
}

// overwritePlaceholder writes want at index q of cq when the unit there
// points at a damaged range; same reports that it already was want.
func (s *Store) overwritePlaceholder(cq *consumeQueue, q int64, want Unit) (same bool, err error) {
	at := q * CQUnitSize
	mf := cq.q.findMappedFileByOffset(at, false)
	if mf == nil || !mf.hold() {
		return false, fmt.Errorf("%w: consume queue %s/%d: unit %d not held", ErrCorruptStore, cq.topic, cq.queueID, q)
	}
	defer mf.release()
	pos := at - mf.fileFromOffset
	if pos+CQUnitSize > mf.wrote.Load() {
		return false, fmt.Errorf("%w: consume queue %s/%d: unit %d not written", ErrCorruptStore, cq.topic, cq.queueID, q)
	}
	cur := DecodeUnit(mf.seg.View(pos, CQUnitSize))
	if cur == want {
		return true, nil
	}
	if !s.damaged(cur.CommitLogOffset) {
		return false, fmt.Errorf("%w: consume queue %s/%d unit %d points at commitlog offset %d, not at the repaired record at %d",
			ErrCorruptStore, cq.topic, cq.queueID, q, cur.CommitLogOffset, want.CommitLogOffset)
	}
	// GetMessage may read this unit meanwhile; it skips it as long as
	// it points into a damaged range, which both the placeholder and
	// the repaired record do until repairDamaged marks the range
	// repaired. A read torn between the two units is not excluded (no
	// lock orders GetMessage with this write); where the placeholder is
	// for the record's own range only TAGSCODE differs.
	b := want.put(make([]byte, 0, CQUnitSize))
	if _, err := mf.seg.WriteAt(b, pos); err != nil {
		return false, fmt.Errorf("consume queue %s/%d: write unit %d: %w", cq.topic, cq.queueID, q, err)
	}
	if err := cq.q.syncDirs(); err != nil { // the file must outlive the sync
		return false, err
	}
	if err := mf.seg.Sync(pos, CQUnitSize); err != nil {
		return false, fmt.Errorf("%w: consume queue %s/%d: sync unit %d: %w", ErrFlushFailed, cq.topic, cq.queueID, q, err)
	}
	return false, nil
}

// dispatchExtra passes req to the dispatchers after the ConsumeQueue
// builder (they are idempotent).
func (s *Store) dispatchExtra(req *dispatch.Request) error {
	var errs []error
	for _, d := range s.extraDispatchers {
		errs = append(errs, d.Dispatch(req))
	}
	return errors.Join(errs...)
}
