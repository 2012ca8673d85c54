package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
)

// CQUnitSize is the size of a ConsumeQueue unit:
//
//	0 commitlog offset int64 | 8 size int32 | 12 tagsCode int64
//
// A unit of (0, math.MaxInt32, 0) is a pre-blank filler; a size of 0 marks
// the end of the data.
const CQUnitSize = 20

// Unit is one ConsumeQueue entry.
type Unit struct {
	CommitLogOffset int64
	Size            int32
	TagsCode        int64
}

// DecodeUnit reads the unit at the start of b (len(b) >= CQUnitSize).
func DecodeUnit(b []byte) Unit {
	return Unit{
		CommitLogOffset: int64(binary.BigEndian.Uint64(b)),
		Size:            int32(binary.BigEndian.Uint32(b[8:])),
		TagsCode:        int64(binary.BigEndian.Uint64(b[12:])),
	}
}

// valid reports whether u is a real entry (RocketMQ: offset >= 0 && size > 0).
func (u Unit) valid() bool { return u.CommitLogOffset >= 0 && u.Size > 0 }

func (u Unit) put(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(u.CommitLogOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(u.Size))
	return binary.BigEndian.AppendUint64(b, uint64(u.TagsCode))
}

var blankUnit = Unit{CommitLogOffset: 0, Size: math.MaxInt32, TagsCode: 0}

// consumeQueue is the index of one topic queue: unit i points at the i-th
// message of the queue in the CommitLog. Only the dispatcher writes it.
type consumeQueue struct {
	topic   string
	queueID int32
	q       *mappedFileQueue

	// maxPhysicOffset is the CommitLog end of the last unit written; puts
	// at or below it are replays and are skipped (idempotency).
	maxPhysicOffset atomic.Int64
	// minLogicOffset is the byte offset of the first real unit.
	minLogicOffset atomic.Int64

	buf [CQUnitSize]byte // owned by the dispatcher goroutine

	// noMaxPhysicOffsetCheck is hooks.Engine.NoMaxPhysicOffsetCheck:
	// both idempotency checks of putMessagePositionInfo are off.
	noMaxPhysicOffsetCheck bool
	// noReplayedUnitCheck is hooks.Engine.NoReplayedUnitCheck.
	noReplayedUnitCheck bool
	// keepEmptyLastFile is hooks.Engine.KeepEmptyLastQueueFile.
	keepEmptyLastFile bool
	// noStartupUnitCheck is hooks.Engine.NoStartupUnitCheck.
	noStartupUnitCheck bool
	// stage buffers units during abnormal recovery's scan (recovercq.go).
	stage *unitStage
}

func newConsumeQueue(fs backend.FS, root, topic string, queueID int32, units int64) *consumeQueue {
	dir := path.Join(root, topic, strconv.Itoa(int(queueID)))
	cq := &consumeQueue{topic: topic, queueID: queueID, q: newMappedFileQueue(fs, dir, units*CQUnitSize)}
	// Units are appended 20 bytes at a time and read back while still in
	// the page cache: read-around on a new file's write faults only costs
	// the dispatcher time (the first one 1-1.5 ms here).
	cq.q.noReadAround = true
	cq.maxPhysicOffset.Store(-1)
	return cq
}

// Topic returns the queue's topic.
func (cq *consumeQueue) Topic() string { return cq.topic }

// QueueID returns the queue's id.
func (cq *consumeQueue) QueueID() int32 { return cq.queueID }

// MinOffsetInQueue returns the index of the first unit held.
func (cq *consumeQueue) MinOffsetInQueue() int64 { return cq.minLogicOffset.Load() / CQUnitSize }

// MaxOffsetInQueue returns the index of the next unit to be written.
func (cq *consumeQueue) MaxOffsetInQueue() int64 { return cq.q.MaxOffset() / CQUnitSize }

// MaxPhysicOffset returns the CommitLog end of the last unit (-1 if none).
func (cq *consumeQueue) MaxPhysicOffset() int64 { return cq.maxPhysicOffset.Load() }

// unitsPerFile returns the number of units in each file.
func (cq *consumeQueue) unitsPerFile() int64 { return cq.q.fileSize / CQUnitSize }

// RollNextFile returns the first index of the file after the one holding
// index.
func (cq *consumeQueue) RollNextFile(index int64) int64 {
	n := cq.unitsPerFile()
	return index + n - index%n
}

// putMessagePositionInfo appends the unit for queue index cqOffset,
// idempotently: a unit for CommitLog bytes at or below maxPhysicOffset, or
// for an index already written, is skipped (RocketMQ's
// putMessagePositionInfo). It returns true when the unit is in place.
func (cq *consumeQueue) putMessagePositionInfo(offset int64, size int32, tagsCode, cqOffset int64) (bool, error) {
	if offset+int64(size) <= cq.maxPhysicOffset.Load() && !cq.noMaxPhysicOffsetCheck {
		return true, nil
	}
	expect := cqOffset * CQUnitSize
	mf, err := cq.fileFor(expect)
	if err != nil {
		return false, err
	}
	// RocketMQ fills when the file is the queue's first-ever one; here
	// that is "the only file, still empty" (it may also be one that
	// recovery truncated to nothing), and fileFor made it hold expect.
	// When expect starts the file there is nothing to fill, but the
	// minimum must still move to expect, as in RocketMQ.
	if mf.wrote.Load() == 0 && cqOffset != 0 && len(cq.q.snapshot()) == 1 {
		if err := cq.fillPreBlank(mf, expect); err != nil {
			return false, err
		}
	}
	cur := mf.fileFromOffset + mf.wrote.Load()
	if expect < cur && !cq.noMaxPhysicOffsetCheck {
		// Already written: a replay. RocketMQ only checks this for
		// cqOffset != 0 and appends a replayed unit 0 a second time; the
		// maxPhysicOffset check above normally catches replays first.
		// Here the unit in place must be this one (replayedUnitMatches).
		return true, cq.replayedUnitMatches(expect, Unit{offset, size, tagsCode})
	}
	if expect < cur {
		// hooks.Engine.NoMaxPhysicOffsetCheck: the replay takes RocketMQ's path
		// for a unit out of order ("[BUG]logic queue order maybe wrong")
		// and is appended at the end, a duplicate.
		expect = cur
	}
	if expect != cur {
		// RocketMQ logs "[BUG]logic queue order maybe wrong" and appends
		// anyway; a gap would make every later index wrong, so refuse.
		return false, fmt.Errorf("%w: %w: consume queue %s/%d: unit %d written at index %d",
			ErrCorruptStore, errQueueGap, cq.topic, cq.queueID, cqOffset, cur/CQUnitSize)
	}
	b := Unit{offset, size, tagsCode}.put(cq.buf[:0])
	pos := mf.wrote.Load()
	if err := cq.appendUnit(mf, pos, b); err != nil {
		return false, err
	}
	cq.maxPhysicOffset.Store(offset + int64(size))
	mf.publish(pos + CQUnitSize)
	return true, nil
}

// errQueueConflict reports a queue index already holding a unit for
// another record than the one dispatched for it.
var errQueueConflict = errors.New("engine: consume queue index holds another record's unit")

// replayedUnitMatches checks, for a record whose queue index is already
// written but whose CommitLog bytes lie past the queue's maxPhysicOffset,
// that the unit there is the record's. A replay always finds its own
// unit; another one means the queue holds units that are not its own: a
// page that never reached the disk before a power cut and came back
// holding a freed block of a deleted ConsumeQueue file (crashsim's
// ReuseFreedBlocks; ext4 data=writeback on sparse files), whose units
// point below the CommitLog minimum, where recovery cannot check them.
// Skipping the record as RocketMQ does would leave it unreachable; the
// error makes recovery rebuild the queues from the CommitLog.
func (cq *consumeQueue) replayedUnitMatches(expect int64, want Unit) error {
	if cq.noReplayedUnitCheck {
		return nil
	}
	if err := cq.flushStage(); err != nil {
		return err
	}
	mf := cq.q.findMappedFileByOffset(expect, false)
	if mf == nil || !mf.hold() {
		return nil // below the queue's first file: deleted, nothing to compare
	}
	defer mf.release()
	pos := expect - mf.fileFromOffset
	if pos+CQUnitSize > mf.wrote.Load() {
		return nil
	}
	if got := DecodeUnit(mf.seg.View(pos, CQUnitSize)); got != want {
		return fmt.Errorf("%w: %w: consume queue %s/%d: unit %d is %+v, the record dispatched for it is %+v",
			ErrCorruptStore, errQueueConflict, cq.topic, cq.queueID, expect/CQUnitSize, got, want)
	}
	return nil
}

// fileFor returns the file to append unit byte offset expect to. A queue
// whose only file is empty but does not cover expect (recovery truncated
// it to nothing, and the CommitLog now starts elsewhere) gets that file
// replaced by one that does: getLastMappedFile would return the empty file
// and the unit would land at the wrong index.
func (cq *consumeQueue) fileFor(expect int64) (*mappedFile, error) {
	files := cq.q.snapshot()
	if len(files) == 1 && files[0].wrote.Load() == 0 &&
		(expect < files[0].fileFromOffset || expect >= files[0].fileFromOffset+cq.q.fileSize) {
		if err := cq.q.deleteLastFile(); err != nil {
			return nil, err
		}
		// Nothing is left to flush; flush starts again at the new file.
		cq.q.setFlushedWhere(0)
	}
	return cq.q.getLastMappedFile(expect, true)
}

// fillPreBlank fills a queue's first file with blank units up to expect, for
// a queue whose first index is not 0 (its earlier files were deleted).
func (cq *consumeQueue) fillPreBlank(mf *mappedFile, expect int64) error {
	until := expect % cq.q.fileSize
	b := blankUnit.put(cq.buf[:0])
	for pos := int64(0); pos < until; pos += CQUnitSize {
		if _, err := mf.appendAt(pos, b); err != nil {
			return err
		}
	}
	mf.publish(until)
	cq.minLogicOffset.Store(expect)
	cq.q.setFlushedWhere(mf.fileFromOffset) // the blanks still need a sync
	return nil
}

// indexView returns the units from index to the end of the published part
// of the file holding it (one file only), with a reference held; nil when
// index is below the minimum or not written.
func (cq *consumeQueue) indexView(index int64) ([]byte, *mappedFile) {
	off := index * CQUnitSize
	if off < cq.minLogicOffset.Load() {
		return nil, nil
	}
	mf := cq.q.findMappedFileByOffset(off, false)
	if mf == nil {
		return nil, nil
	}
	pos := off - mf.fileFromOffset
	b, ok := mf.view(pos, mf.wrote.Load()-pos)
	if !ok || len(b) == 0 {
		if ok {
			mf.release()
		}
		return nil, nil
	}
	return b, mf
}

// UnitAt returns the unit at index, or false if there is none.
func (cq *consumeQueue) UnitAt(index int64) (Unit, bool) {
	b, mf := cq.indexView(index)
	if b == nil {
		return Unit{}, false
	}
	defer mf.release()
	if len(b) < CQUnitSize {
		return Unit{}, false
	}
	return DecodeUnit(b), true
}

// recover walks the units from the third-from-last file, setting
// maxPhysicOffset, and truncates after the last valid unit.
func (cq *consumeQueue) recover() error {
	files := cq.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	start := max(0, len(files)-3)
	end := files[start].fileFromOffset
	for _, mf := range files[start:] {
		pos, maxPhy := scanUnits(mf.seg.View(0, mf.fileSize))
		if maxPhy >= 0 {
			cq.maxPhysicOffset.Store(maxPhy)
		}
		end = mf.fileFromOffset + pos
		if pos < mf.fileSize {
			break
		}
	}
	cq.q.setFlushedWhere(end)
	return cq.q.truncateDirtyFiles(end)
}

// scanUnits returns the byte position after the last valid unit of b and
// the largest CommitLog end among them (-1 when there is none). Blank
// fillers count as valid but carry no CommitLog position.
func scanUnits(b []byte) (int64, int64) {
	maxPhy := int64(-1)
	pos := 0
	for ; pos+CQUnitSize <= len(b); pos += CQUnitSize {
		u := DecodeUnit(b[pos:])
		if !u.valid() {
			break
		}
		if u != blankUnit {
			maxPhy = u.CommitLogOffset + int64(u.Size)
		}
	}
	return int64(pos), maxPhy
}

// truncateDirtyLogicFiles drops every unit whose record does not end at or
// before phy (the recovered CommitLog end), deleting files that start past
// it, and zeroes the tail, looking back from the last file as RocketMQ
// does. With check set (recovery after an abnormal exit) it walks forward
// instead and checks every unit it keeps: see truncateAfterCrash.
func (cq *consumeQueue) truncateDirtyLogicFiles(phy int64, check *unitChecker) error {
	if check != nil {
		return cq.truncateAfterCrash(phy, check)
	}
	for {
		mf := cq.q.lastFile()
		if mf == nil {
			cq.maxPhysicOffset.Store(-1)
			return nil
		}
		b := mf.seg.View(0, mf.wrote.Load())
		pos, maxPhy := 0, int64(-1)
		for ; pos+CQUnitSize <= len(b); pos += CQUnitSize {
			u := DecodeUnit(b[pos:])
			if !u.valid() || (u != blankUnit && u.CommitLogOffset+int64(u.Size) > phy) {
				break
			}
			if u != blankUnit {
				maxPhy = u.CommitLogOffset + int64(u.Size)
			}
		}
		if pos == 0 && len(cq.q.snapshot()) > 1 {
			// Nothing of this file survives: drop it and look at the one
			// before.
			if err := cq.q.deleteLastFile(); err != nil {
				return err
			}
			continue
		}
		if maxPhy < 0 {
			maxPhy = cq.prevMaxPhysicOffset(mf)
		}
		cq.maxPhysicOffset.Store(maxPhy)
		return cq.q.truncateDirtyFiles(mf.fileFromOffset + int64(pos))
	}
}

// prevMaxPhysicOffset returns the CommitLog end of the last unit before
// file mf, or -1.
func (cq *consumeQueue) prevMaxPhysicOffset(mf *mappedFile) int64 {
	files := cq.q.snapshot()
	for i := len(files) - 1; i >= 0; i-- {
		if files[i].fileFromOffset >= mf.fileFromOffset {
			continue
		}
		_, maxPhy := scanUnits(files[i].seg.View(0, files[i].wrote.Load()))
		if maxPhy >= 0 {
			return maxPhy
		}
	}
	return -1
}

// correctMinOffset sets the minimum to the first unit whose record is still
// in the CommitLog (at or after phyMin), or that is damaged. RocketMQ looks at the first file
// only; here the search goes on into the next files, since a power cut may
// bring back a head file whose removal was not yet durable while the files
// after it also point below phyMin.
func (cq *consumeQueue) correctMinOffset(phyMin int64) {
	files := cq.q.snapshot()
	if len(files) == 0 {
		return
	}
	for _, mf := range files {
		b := mf.seg.View(0, mf.wrote.Load())
		for pos := 0; pos+CQUnitSize <= len(b); pos += CQUnitSize {
			u := DecodeUnit(b[pos:])
			// A unit that is not one is damage (the read path repairs
			// it), not a removed record: stepping past it could skip
			// the message it stands for.
			if u != blankUnit && (!u.valid() && !cq.noStartupUnitCheck || u.valid() && u.CommitLogOffset >= phyMin) {
				cq.minLogicOffset.Store(mf.fileFromOffset + int64(pos))
				return
			}
		}
		if mf.wrote.Load() < mf.fileSize {
			break
		}
	}
	// Every unit is gone: the minimum is the end.
	last := files[len(files)-1]
	cq.minLogicOffset.Store(last.fileFromOffset + last.wrote.Load())
}

// flush syncs dirty units under the least-pages rule.
func (cq *consumeQueue) flush(leastPages int) error {
	_, err := cq.q.flush(leastPages)
	return err
}

// flushAll syncs every unit written.
func (cq *consumeQueue) flushAll() error { return cq.q.flushAll() }
