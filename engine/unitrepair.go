package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/record"
)

// errUnitMismatch reports ConsumeQueue units that do not match the
// CommitLog records they point at (damage to the queue file).
var errUnitMismatch = fmt.Errorf("%w: consume queue unit does not match its commitlog record", ErrCorruptStore)

// unitRepairs counts and logs the ConsumeQueue units that GetMessage found
// not to match their records, and remembers the ones whose record the
// CommitLog no longer holds (lost), so that pulls step over them instead
// of scanning the CommitLog for them again.
type unitRepairs struct {
	mu   sync.Mutex // one repair at a time; guards lost
	lost map[lostUnit]struct{}

	mismatches, repaired, lostCount atomic.Int64
	log                             faultLog
}

type lostUnit struct {
	topic   string
	queueID int32
	index   int64
}

// unitMatches reports whether rec, the size bytes a unit of cq at queue
// offset index points at, is that unit's record: a v1 message header whose
// TOTALSIZE, QUEUEID, QUEUEOFFSET and TOPIC are the unit's (RocketMQ checks
// the same on its read path). It reads those fields in place: this runs
// for every message a pull returns.
func unitMatches(rec []byte, size int32, cq *consumeQueue, index int64) bool {
	sz, qid, qoff, topic, ok := record.QueueFields(rec)
	return ok && sz == size && qid == cq.queueID && qoff == index && string(topic) == cq.topic
}

// isLost reports whether the unit at index of cq was found damaged and its
// record could not be found in the CommitLog.
func (s *Store) isLost(cq *consumeQueue, index int64) bool {
	s.units.mu.Lock()
	defer s.units.mu.Unlock()
	_, ok := s.units.lost[lostUnit{cq.topic, cq.queueID, index}]
	return ok
}

// unitOK reports whether the unit at index of cq points at its record, or
// at a damaged range (a placeholder), or below the CommitLog minimum
// (deleted by retention: nothing to check it against).
func (s *Store) unitOK(cq *consumeQueue, index int64) bool {
	u, ok := cq.UnitAt(index)
	if !ok {
		return false
	}
	if u.CommitLogOffset >= 0 && u.CommitLogOffset < s.commitLog.MinOffset() {
		return true
	}
	if u.Size <= 0 {
		return false
	}
	if s.damaged(u.CommitLogOffset) {
		return true
	}
	b, mf := s.commitLog.view(u.CommitLogOffset, int(u.Size))
	if b == nil {
		return false
	}
	defer mf.release()
	return unitMatches(b, u.Size, cq, index)
}

// repairUnits rewrites the damaged units around index k of cq from the
// CommitLog: the units between the nearest good unit below k (lo) and the
// nearest above (hi) all failed the check; every record of the queue with
// a queue offset between them lies in the CommitLog between lo's record
// and hi's, and knows its queue offset, so each gets its unit back. A
// queue offset whose record is not found is lost: remembered, counted and
// stepped over by pulls. The queue never moves: consumers before and after
// the damage keep their offsets.
func (s *Store) repairUnits(cq *consumeQueue, k int64) error {
	r := &s.units
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.unitOK(cq, k) {
		return nil // another pull repaired it
	}
	minQ, maxQ := cq.MinOffsetInQueue(), cq.MaxOffsetInQueue()
	lo := k - 1
	for lo >= minQ && !s.unitOK(cq, lo) {
		lo--
	}
	hi := k + 1
	for hi < maxQ && !s.unitOK(cq, hi) {
		hi++
	}
	from, to := s.commitLog.MinOffset(), s.reput.ReputFromOffset()
	if u, ok := cq.UnitAt(lo); ok && lo >= minQ {
		from = max(from, u.CommitLogOffset+int64(u.Size))
	}
	if u, ok := cq.UnitAt(hi); ok && hi < maxQ {
		to = u.CommitLogOffset
	}
	found, err := s.rewriteUnitsFrom(cq, lo, hi, from, to)
	bad := hi - lo - 1
	r.mismatches.Add(bad)
	r.repaired.Add(int64(len(found)))
	var lost []int64
	if err == nil {
		for q := lo + 1; q < hi; q++ {
			if _, ok := found[q]; !ok {
				lost = append(lost, q)
			}
		}
		if r.lost == nil {
			r.lost = map[lostUnit]struct{}{}
		}
		for _, q := range lost {
			r.lost[lostUnit{cq.topic, cq.queueID, q}] = struct{}{}
		}
		r.lostCount.Add(int64(len(lost)))
	}
	cause := fmt.Errorf("%w: %s/%d queue offsets [%d, %d)", errUnitMismatch, cq.topic, cq.queueID, lo+1, hi)
	const msg = "consume queue: units do not match their commitlog records; never served, rewritten from the commitlog"
	args := []any{"topic", cq.topic, "queueId", cq.queueID, "from", lo + 1, "to", hi,
		"repaired", len(found), "lost", len(lost), "commitlogFrom", from, "commitlogTo", to}
	if err != nil {
		// A rewrite that fails (a full disk) is tried again by the next
		// pull of the range: one line a fault interval.
		r.log.failed(s.cfg.Logger, msg, errors.Join(cause, err), args...)
		return err
	}
	// A range rewritten is damage found once: every one is logged, so
	// that damage in one queue never silences another's.
	s.cfg.Logger.Error(msg, append(args, "err", cause)...)
	return nil
}

// rewriteUnitsFrom scans the CommitLog records in [from, to) for those of
// cq with a queue offset in (lo, hi) and writes their units; it returns
// the queue offsets written. A damaged range recovery found is stepped
// over; a record that fails its checks elsewhere ends the scan (the units
// after it stay unfound).
func (s *Store) rewriteUnitsFrom(cq *consumeQueue, lo, hi, from, to int64) (map[int64]struct{}, error) {
	found := map[int64]struct{}{}
	for off := from; off < to; {
		h, mf := s.commitLog.view(off, record.BlankLength)
		if h == nil {
			return found, nil // past the end of the data
		}
		size, magic := int64(int32(be32(h))), int32(be32(h[4:]))
		mf.release()
		if magic == record.MagicBlank {
			off = s.commitLog.rollNextFile(off)
			continue
		}
		if s.damaged(off) {
			off = s.damagedEnd(off)
			continue
		}
		b, mf := s.commitLog.view(off, int(size))
		if b == nil || size < record.FixedOverhead {
			return found, nil
		}
		req, _, _, err := s.parser.Parse(b, off, false)
		mf.release()
		if err != nil {
			return found, nil
		}
		if req.QueueID == cq.queueID && string(req.Topic) == cq.topic && req.Dispatchable() &&
			req.ConsumeQueueOffset > lo && req.ConsumeQueueOffset < hi {
			if err := cq.rewriteUnit(req.ConsumeQueueOffset, Unit{req.CommitLogOffset, req.MsgSize, req.TagsCode}); err != nil {
				return found, err
			}
			found[req.ConsumeQueueOffset] = struct{}{}
		}
		off += size
	}
	return found, nil
}

// damagedEnd returns the end of the damaged range holding off.
func (s *Store) damagedEnd(off int64) int64 {
	for _, d := range s.recovery.Damaged {
		if d.Offset <= off && off < d.End {
			return d.End
		}
	}
	return off + 1
}

// rewriteUnit writes u over the unit at index q of cq and syncs it. Only
// units below the queue's end are rewritten; the dispatcher appends at the
// end, so the two never write the same bytes.
func (cq *consumeQueue) rewriteUnit(q int64, u Unit) error {
	at := q * CQUnitSize
	mf := cq.q.findMappedFileByOffset(at, false)
	if mf == nil || !mf.hold() {
		return fmt.Errorf("%w: consume queue %s/%d: unit %d not held", ErrCorruptStore, cq.topic, cq.queueID, q)
	}
	defer mf.release()
	pos := at - mf.fileFromOffset
	if pos+CQUnitSize > mf.wrote.Load() {
		return fmt.Errorf("%w: consume queue %s/%d: unit %d not written", ErrCorruptStore, cq.topic, cq.queueID, q)
	}
	if _, err := mf.seg.WriteAt(u.put(make([]byte, 0, CQUnitSize)), pos); err != nil {
		return fmt.Errorf("consume queue %s/%d: rewrite unit %d: %w", cq.topic, cq.queueID, q, err)
	}
	if err := cq.q.syncDirs(); err != nil {
		return err
	}
	if err := mf.seg.Sync(pos, CQUnitSize); err != nil {
		return fmt.Errorf("%w: consume queue %s/%d: sync unit %d: %w", ErrFlushFailed, cq.topic, cq.queueID, q, err)
	}
	return nil
}
