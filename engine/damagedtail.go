package engine

import (
	"log/slog"

	"github.com/rocketstore/rocketstore/dispatch"
)

// keepDamagedQueueOffsets gives every damaged record that recovery skipped
// and that its queue's ConsumeQueue lacks a placeholder unit at its own
// queue offset, so that the offset stays consumed.
//
// A damaged record in the middle of its queue gets its placeholder when
// the next record of the queue is dispatched (fillDamagedUnits). One that
// was its queue's last has no such successor: without this the queue's
// next offset, recovered from the ConsumeQueue, would be the damaged
// record's, the next put would take it, and two records would claim one
// queue offset (a replica, or this node after repairDamaged, holds the
// damaged record there). RocketMQ's queue offsets are dense, one unit per
// offset, and consumers move past a unit that yields no message; so the
// unit is kept, pointing at the damaged record with tags code 0, and
// GetMessage skips it (as any unit pointing into a damaged range) until
// repairDamaged overwrites it with the real one.
//
// The queue and queue offset come from the damaged record's own header,
// read without the body CRC and only when its PHYSICALOFFSET is its
// position; a record whose header does not read, or names an offset the
// queue cannot take next, is logged: its queue offset may be reused.
func (s *Store) keepDamagedQueueOffsets() error {
	for _, d := range s.recovery.Damaged {
		if !s.commitLog.committed(d.Offset) {
			// Uncommitted records of a store of replicated records:
			// dispatched once repaired and committed (recordDamage);
			// their queue offsets are taken by recoverRecords, or once
			// repaired (retakeUncommitted).
			continue
		}
		mf := s.commitLog.q.findMappedFileByOffset(d.Offset, false)
		if mf == nil {
			continue
		}
		// A damaged range never crosses into the next file with a
		// readable record: headers are read from this file only.
		b := mf.seg.View(0, mf.fileSize)
		end := min(d.End, mf.fileFromOffset+mf.fileSize)
		for off := d.Offset; off < end; {
			req, size, blank, err := s.parser.Parse(b[off-mf.fileFromOffset:end-mf.fileFromOffset], off, false)
			if err != nil || blank || size <= 0 {
				if off == d.Offset {
					s.cfg.Logger.Error("damaged commitlog record has no readable header: its queue is unknown, and if it was its queue's last message the next put to that queue takes its queue offset",
						"file", d.File, "offset", d.Offset, "reason", d.Reason)
				}
				break
			}
			if err := s.keepDamagedQueueOffset(&req); err != nil {
				return err
			}
			off += int64(size)
		}
	}
	return nil
}

// keepDamagedQueueOffset writes the placeholder unit for the damaged
// record req describes when its queue lacks it.
func (s *Store) keepDamagedQueueOffset(req *dispatch.Request) error {
	if !req.Dispatchable() || s.deletedBelow(req.Topic, req.CommitLogOffset) {
		return nil
	}
	q := req.ConsumeQueueOffset
	cq := s.queues.find(string(req.Topic), req.QueueID)
	cur := int64(0)
	if cq != nil {
		cur = cq.MaxOffsetInQueue()
	}
	if q < cur {
		return nil // in place: dispatched before the damage, or filled
	}
	if checkTopicName(string(req.Topic)) != nil || req.QueueID < 0 {
		s.cfg.Logger.Error("damaged commitlog record names no valid queue; its queue offset is not kept",
			"offset", req.CommitLogOffset, "topic", string(req.Topic), "queueId", req.QueueID)
		return nil
	}
	if q > cur {
		// Earlier offsets of the queue belong to damaged records whose
		// headers did not read; they take the damaged ranges before
		// this record, if there are enough of them.
		cq, err := s.queues.findOrCreate(s, req.Topic, req.QueueID)
		if err != nil {
			return err
		}
		if err := s.fillDamagedUnits(cq, req); err != nil {
			s.cfg.Logger.Error("damaged commitlog record's queue offset is past its queue's end; not kept",
				"offset", req.CommitLogOffset, "topic", cq.topic, "queueId", cq.queueID, "queueOffset", q, "queueEnd", cur, "err", err)
			return nil
		}
	}
	return s.keepQueueOffset(req.Topic, req.QueueID, q, Unit{req.CommitLogOffset, req.MsgSize, 0}, slog.LevelError,
		"damaged commitlog record was its queue's last: its queue offset is kept by a unit that consumers skip",
		"offset", req.CommitLogOffset, "queueOffset", q)
}
