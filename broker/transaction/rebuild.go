package transaction

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// rebuild reads the half queue (every copy of every half message still
// held), then the op queue (which ends transactions), then repairs
// commits whose op record a crash lost.
func (s *Service) rebuild(ctx context.Context) error {
	err := s.scanQueue(record.TransHalfTopic, halfQueueID, func(m *engine.MessageExt) {
		s.addHalf(m.QueueOffset, m.CommitLogOffset, &m.Message)
	})
	if err != nil {
		return fmt.Errorf("transaction: read %s: %w", record.TransHalfTopic, err)
	}
	err = s.scanQueue(record.TransOpHalfTopic, opQueueID, func(m *engine.MessageExt) {
		qo, perr := strconv.ParseInt(string(m.Body), 10, 64)
		root, ok := s.rootOf[qo]
		if perr != nil || !ok {
			return // a half message already deleted with its CommitLog file
		}
		o := Outcome(m.Properties[PropOutcome])
		if o == "" {
			o = RolledBack // a RocketMQ op record: ended, outcome unknown
		}
		s.end(root, o)
	})
	if err != nil {
		return fmt.Errorf("transaction: read %s: %w", record.TransOpHalfTopic, err)
	}
	if s.skipRepair {
		return nil
	}
	return s.repairLostOps(ctx)
}

// scanQueue visits every message of a queue, in order.
func (s *Service) scanQueue(topic string, qid int32, visit func(*engine.MessageExt)) error {
	off := s.store.MinOffsetInQueue(topic, qid)
	for off < s.store.MaxOffsetInQueue(topic, qid) {
		res, err := s.store.GetMessage(topic, qid, off, 32, nil)
		if err != nil {
			return err
		}
		for _, v := range res.Messages {
			m, err := record.Decode(v.Record, v.CommitLogOffset, false)
			if err != nil {
				res.Release()
				return fmt.Errorf("record at %d: %w", v.CommitLogOffset, err)
			}
			visit(m)
		}
		next := res.NextBeginOffset
		res.Release()
		if next <= off {
			return fmt.Errorf("queue %s/%d does not advance at %d", topic, qid, off)
		}
		off = next
	}
	return nil
}

// repairLostOps looks, from the oldest open transaction's first half
// message on, for commit records of open transactions: a crash after a
// commit's real message and before its op record. Each is ended as
// committed and its op record written.
func (s *Service) repairLostOps(ctx context.Context) error {
	if len(s.open) == 0 {
		return nil
	}
	from := int64(-1)
	for _, t := range s.open {
		if from < 0 || t.rootCLO < from {
			from = t.rootCLO
		}
	}
	cl := s.store.CommitLog()
	end, fileSize := cl.MaxOffset(), cl.FileSize()
	for off := from; off < end && len(s.open) > 0; {
		m, err := s.store.LookMessageByOffset(off)
		if err != nil {
			off = (off/fileSize + 1) * fileSize // the BLANK record at a file's end
			continue
		}
		off += int64(m.StoreSize)
		if record.TransactionType(m.SysFlag) != record.TransactionCommit {
			continue
		}
		root, ok := s.rootByCL[m.PreparedTransactionOffset]
		if _, open := s.open[root]; !ok || !open {
			continue
		}
		half, err := s.store.LookMessageByOffset(m.PreparedTransactionOffset)
		if err != nil {
			return fmt.Errorf("transaction: half message at %d: %w", m.PreparedTransactionOffset, err)
		}
		s.cfg.Logger.Warn("transaction commit without op record repaired", "halfOffset", half.QueueOffset,
			"messageOffset", m.CommitLogOffset)
		if err := s.putOp(ctx, half.QueueOffset, Committed); err != nil {
			return err
		}
		s.end(root, Committed)
	}
	return nil
}
