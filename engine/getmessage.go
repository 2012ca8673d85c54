package engine

import (
	"math"
	"sync"

	"github.com/rocketstore/rocketstore/record"
)

// GetMessageStatus is the outcome of GetMessage (RocketMQ's
// GetMessageStatus).
type GetMessageStatus int

// The statuses, with the nextBeginOffset each one gives.
const (
	// Found: at least one message; next = offset + units scanned.
	Found GetMessageStatus = iota
	// NoMatchedMessage: units were scanned but none matched the filter.
	NoMatchedMessage
	// MessageWasRemoving: the CommitLog no longer holds the first record.
	MessageWasRemoving
	// OffsetFoundNull: no ConsumeQueue file holds the offset; next = the
	// start of the next file.
	OffsetFoundNull
	// OffsetOverflowBadly: offset > max; next = max (never 0).
	OffsetOverflowBadly
	// OffsetOverflowOne: offset == max, nothing new yet; next = offset.
	OffsetOverflowOne
	// OffsetTooSmall: offset < min; next = min.
	OffsetTooSmall
	// NoMatchedLogicQueue: the queue does not exist; next = 0.
	NoMatchedLogicQueue
	// NoMessageInQueue: the queue is empty; next = 0.
	NoMessageInQueue
)

var statusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

// String returns RocketMQ's name for the status.
func (s GetMessageStatus) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "UNKNOWN"
}

type propertiesFilter interface{ NeedsProperties() bool }

// MessageView is one message of a GetMessageResult: a view of its record in
// the CommitLog, valid until the result is released.
type MessageView struct {
	// Record is the whole CommitLog record (decode it with
	// record.Decode or record.Check).
	Record          []byte
	CommitLogOffset int64
	QueueOffset     int64
	TagsCode        int64
}

// GetMessageResult is what GetMessage returns. Its views stay valid until
// Release, which the caller must call exactly once.
type GetMessageResult struct {
	Status          GetMessageStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Messages are in queue order.
	Messages []MessageView
	// BufferTotalSize is the sum of the record sizes.
	BufferTotalSize int
	// SuggestPullingFromSlave is set when the data read lies beyond the
	// in-memory share of the CommitLog.
	SuggestPullingFromSlave bool

	held []*mappedFile
}

var resultPool = sync.Pool{New: func() any { return new(GetMessageResult) }}

// Release returns the views' files and the result to the store.
func (r *GetMessageResult) Release() {
	for _, mf := range r.held {
		mf.release()
	}
	clear(r.held)
	*r = GetMessageResult{Messages: r.Messages[:0], held: r.held[:0]}
	resultPool.Put(r)
}

// GetMessage reads up to maxMsgNums messages of topic/queueID from queue
// offset offset that match filter (nil matches all), with RocketMQ 4.9.4's
// statuses, nextBeginOffset rules and transfer limits. RocketMQ's
// getMessage also takes the consumer group, for statistics only; the
// broker keeps those, so the store does not ask for it.
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgNums int, filter record.MessageFilter) (*GetMessageResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	res := resultPool.Get().(*GetMessageResult)
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		res.Status, res.NextBeginOffset = NoMatchedLogicQueue, 0
		return res, nil
	}
	res.MinOffset, res.MaxOffset = cq.MinOffsetInQueue(), cq.MaxOffsetInQueue()
	switch {
	case res.MaxOffset == 0:
		res.Status, res.NextBeginOffset = NoMessageInQueue, 0
	case offset < res.MinOffset:
		res.Status, res.NextBeginOffset = OffsetTooSmall, res.MinOffset
	case offset == res.MaxOffset:
		res.Status, res.NextBeginOffset = OffsetOverflowOne, offset
	case offset > res.MaxOffset:
		// RocketMQ 4.9.4's fix (#4215): never send a consumer back to 0.
		res.Status, res.NextBeginOffset = OffsetOverflowBadly, res.MaxOffset
	default:
		s.scanQueue(res, cq, offset, maxMsgNums, filter)
	}
	return res, nil
}

// scanQueue is the FOUND / NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING /
// OFFSET_FOUND_NULL part of getMessage.
func (s *Store) scanQueue(res *GetMessageResult, cq *consumeQueue, offset int64, maxMsgNums int, filter record.MessageFilter) {
	units, cqFile := cq.indexView(offset)
	if units == nil {
		res.Status, res.NextBeginOffset = OffsetFoundNull, cq.RollNextFile(offset)
		return
	}
	defer cqFile.release()
	maxOffsetPy := s.commitLog.MaxOffset()
	memory := s.cfg.TotalPhysicalMemory * int64(s.cfg.AccessMessageInMemoryMaxRatio) / 100
	needProps := false
	if pf, ok := filter.(propertiesFilter); ok {
		needProps = pf.NeedsProperties()
	}
	res.Status = NoMatchedMessage
	nextPhyFileStart := int64(math.MinInt64)
	maxPhyPulling := int64(0)
	limit := min(len(units), max(16000, maxMsgNums*CQUnitSize))
	check := !s.cfg.hooks.NoUnitCheck
	repairedAt := int64(-1) // the queue offset repairUnits last ran for
	var fresh *Unit         // that unit as the repair left it
	prevEnd := int64(-1)    // CommitLog end of the last unit that passed
	i := 0
	for ; i+CQUnitSize <= limit; i += CQUnitSize {
		u := DecodeUnit(units[i:])
		if fresh != nil {
			u, fresh = *fresh, nil
		}
		q := offset + int64(i/CQUnitSize)
		maxPhyPulling = u.CommitLogOffset
		// A unit that is not one (a negative offset or size, a record
		// past the CommitLog's end, an offset before the unit before it)
		// is checked against its record before anything trusts it: the
		// filter would drop it by its garbage tags code, the read below
		// take its offset for a removed file's.
		var b []byte
		var mf *mappedFile
		bad := check && repairedAt != q && malformedUnit(u, prevEnd, maxOffsetPy) && !s.unitOK(cq, q)
		if !bad {
			if nextPhyFileStart != math.MinInt64 && u.CommitLogOffset < nextPhyFileStart {
				continue
			}
			inDisk := maxOffsetPy-u.CommitLogOffset > memory
			if s.isTheBatchFull(int(u.Size), maxMsgNums, res.BufferTotalSize, len(res.Messages), inDisk) {
				break
			}
			prevEnd = max(prevEnd, u.CommitLogOffset+int64(u.Size))
			// Until something is found the status is that of the last unit
			// looked at, exactly as in 4.9.4's getMessage: a filtered unit
			// after a removed one says NO_MATCHED_MESSAGE, and vice versa.
			if filter != nil && !filter.IsMatchedByConsumeQueue(u.TagsCode) {
				if len(res.Messages) == 0 {
					res.Status = NoMatchedMessage
				}
				continue
			}
			if len(s.recovery.Damaged) > 0 && s.damaged(u.CommitLogOffset) {
				// Recovery found this record damaged: never delivered.
				if len(res.Messages) == 0 {
					res.Status = NoMatchedMessage
				}
				continue
			}
			b, mf = s.commitLog.view(u.CommitLogOffset, int(u.Size))
			bad = check && (b == nil && u.CommitLogOffset >= s.commitLog.MinOffset() ||
				b != nil && !unitMatches(b, u.Size, cq, q))
		}
		if bad {
			// A damaged unit: never served, and never a reason to skip
			// the intact messages after it (RocketMQ would skip to the
			// next CommitLog file here).
			if b != nil {
				mf.release()
			}
			switch {
			case s.isLost(cq, q):
				// Its record is gone: stepped over, as a damaged record is.
				if len(res.Messages) == 0 {
					res.Status = NoMatchedMessage
				}
				continue
			case len(res.Messages) > 0 || repairedAt == q:
				// Serve what precedes it; the next pull starts at it.
			default:
				repairedAt = q
				if s.repairUnits(cq, q) == nil {
					if r, ok := cq.UnitAt(q); ok {
						fresh = &r
						i -= CQUnitSize
						continue
					}
				}
			}
			break
		}
		if b == nil {
			if len(res.Messages) == 0 {
				res.Status = MessageWasRemoving
			}
			nextPhyFileStart = s.commitLog.rollNextFile(u.CommitLogOffset)
			continue
		}
		if filter != nil && !filter.IsMatchedByCommitLog(propsFor(b, needProps)) {
			if len(res.Messages) == 0 {
				res.Status = NoMatchedMessage
			}
			mf.release()
			continue
		}
		res.Messages = append(res.Messages, MessageView{Record: b, CommitLogOffset: u.CommitLogOffset,
			QueueOffset: offset + int64(i/CQUnitSize), TagsCode: u.TagsCode})
		res.held = append(res.held, mf)
		res.BufferTotalSize += len(b)
		res.Status = Found
		nextPhyFileStart = math.MinInt64
	}
	res.SuggestPullingFromSlave = maxOffsetPy-maxPhyPulling > memory
	res.NextBeginOffset = offset + int64(i/CQUnitSize)
}

// malformedUnit reports whether u cannot be a unit of a queue whose unit
// before it ended at prevEnd (-1: not known) in a CommitLog ending at
// maxOffsetPy: a negative offset or size, a record past the end, or an
// offset before the previous record's end (a queue's records are in
// CommitLog order).
func malformedUnit(u Unit, prevEnd, maxOffsetPy int64) bool {
	if u == blankUnit {
		return false
	}
	return !u.valid() || u.CommitLogOffset+int64(u.Size) > maxOffsetPy || u.CommitLogOffset < prevEnd
}

// propsFor decodes a record's properties for filters that need them.
func propsFor(rec []byte, need bool) map[string]string {
	if !need {
		return nil
	}
	info, err := record.Check(rec, -1, false)
	if err != nil {
		return map[string]string{}
	}
	return record.ParseProperties(info.Properties)
}

// isTheBatchFull applies the transfer limits; it never stops before the
// first message.
func (s *Store) isTheBatchFull(size, maxMsgNums, bufferTotal, count int, inDisk bool) bool {
	if bufferTotal == 0 || count == 0 {
		return false
	}
	if count >= maxMsgNums {
		return true
	}
	if inDisk {
		return bufferTotal+size > s.cfg.MaxTransferBytesOnMessageInDisk || count > s.cfg.MaxTransferCountOnMessageInDisk-1
	}
	return bufferTotal+size > s.cfg.MaxTransferBytesOnMessageInMemory || count > s.cfg.MaxTransferCountOnMessageInMemory-1
}

// MinOffsetInQueue returns the first queue offset held (0 for an unknown
// queue).
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.queues.find(topic, queueID); cq != nil {
		return cq.MinOffsetInQueue()
	}
	return 0
}

// MaxOffsetInQueue returns the next queue offset to be written (0 for an
// unknown queue).
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.queues.find(topic, queueID); cq != nil {
		return cq.MaxOffsetInQueue()
	}
	return 0
}

// CommitLogOffsetInQueue returns the CommitLog offset of the message at a
// queue offset.
func (s *Store) CommitLogOffsetInQueue(topic string, queueID int32, queueOffset int64) (int64, error) {
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		return 0, ErrNotFound
	}
	u, ok := cq.UnitAt(queueOffset)
	if !ok || u == blankUnit {
		return 0, ErrNotFound
	}
	return u.CommitLogOffset, nil
}

// LookMessageByOffset decodes the message stored at a CommitLog offset.
func (s *Store) LookMessageByOffset(commitLogOffset int64) (*MessageExt, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	b, mf := s.commitLog.recordAt(commitLogOffset)
	if b == nil {
		return nil, ErrNotFound
	}
	defer mf.release()
	return record.Decode(b, commitLogOffset, false)
}

// LookMessageByMsgID decodes the message with an offset message id.
func (s *Store) LookMessageByMsgID(id string) (*MessageExt, error) {
	_, off, err := record.ParseOffsetMsgID(id)
	if err != nil {
		return nil, err
	}
	return s.LookMessageByOffset(off)
}

// Topics returns every topic with a ConsumeQueue and its queue ids.
func (s *Store) Topics() map[string][]int32 {
	out := make(map[string][]int32)
	for t, qs := range s.queues.snapshot() {
		for id := range qs {
			out[t] = append(out[t], id)
		}
	}
	return out
}
