package engine

import (
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
)

// unitStaging batches the ConsumeQueue units that abnormal recovery's scan
// writes: each queue's units collect in a small buffer and reach the file in
// one write per buffer, through the file (backend.Pwriter: pwrite on the
// mmap backend) where the backend can, instead of 20 bytes at a time through
// the mapping. Writing a fresh page through a mapping costs a page fault per
// page, and on a virtual machine a first write to a page still costs 10-60 µs
// after MADV_POPULATE_WRITE; a rebuilt queue is all fresh pages (1 GiB of
// 1 KiB records is 20 MiB of units, 5,000 pages), and that was a third of
// the scan's time. pwrite fills the same page cache the mapping shows.
//
// Positions are published as before, unit by unit; only the bytes lag, and
// only while the scan runs, when nothing reads a queue's units but
// replayedUnitMatches, which flushes its queue first. The scan flushes every
// queue when it ends (endUnitStaging), before recovery reads or truncates
// any queue.
type unitStaging struct {
	queues []*consumeQueue // queues with a stage, flushed and detached at the end
	bytes  int             // the stages' buffers, in all
}

// unitStage is one queue's buffered units: len(buf) bytes for file mf from
// file position from.
type unitStage struct {
	mf     *mappedFile
	from   int64
	buf    []byte
	pieces [1][]byte    // Pwrite's argument, kept so that a flush allocates nothing
	all    *unitStaging // for the buffers' budget
}

// Staging limits: a queue's buffer starts at 16 KiB (four pages, 819 units)
// and doubles each time it fills, up to 256 KiB, while the buffers of all
// queues stay within 16 MiB; at most 1,024 queues are staged, and other
// queues write through the mapping as always. Large writes are cheaper per
// unit: the page cache takes a new file's pages in larger folios (the
// bench's 20 MiB of units for one queue took 0.37 CPU s per recovery
// against 0.34 with 256 KiB writes, side by side).
const (
	unitStageBytes    = 16 << 10
	maxUnitStageBytes = 256 << 10
	maxStagedBytes    = 16 << 20
	maxStagedQueues   = 1024
)

// beginUnitStaging makes the units of every queue, existing or created from
// now on, staged until endUnitStaging.
func (s *Store) beginUnitStaging() {
	s.staging = &unitStaging{}
	s.queues.all(func(cq *consumeQueue) error {
		s.staging.attach(cq)
		return nil
	})
}

// attach gives cq a stage, while fewer than maxStagedQueues have one.
func (st *unitStaging) attach(cq *consumeQueue) {
	if st == nil || cq.stage != nil || len(st.queues) >= maxStagedQueues {
		return
	}
	cq.stage = &unitStage{all: st} // its buffer comes with the first unit
	st.queues = append(st.queues, cq)
}

// endUnitStaging writes every staged unit and returns queues to writing
// through the mapping. It returns the first write error; every queue is
// detached regardless.
func (s *Store) endUnitStaging() error {
	st := s.staging
	if st == nil {
		return nil
	}
	s.staging = nil
	var first error
	for _, cq := range st.queues {
		if err := cq.flushStage(); err != nil && first == nil {
			first = err
		}
		cq.stage = nil
	}
	return first
}

// appendUnit writes unit bytes b at file position pos of mf, the queue's
// last file: into the stage when the queue has one, else through the
// mapping.
func (cq *consumeQueue) appendUnit(mf *mappedFile, pos int64, b []byte) error {
	st := cq.stage
	if st == nil || pos+int64(len(b)) > mf.fileSize {
		_, err := mf.appendAt(pos, b) // out of range: appendAt's error
		return err
	}
	if len(st.buf) > 0 && (st.mf != mf || st.from+int64(len(st.buf)) != pos || len(st.buf)+len(b) > cap(st.buf)) {
		full := len(st.buf)+len(b) > cap(st.buf)
		if err := cq.flushStage(); err != nil {
			return err
		}
		if full {
			st.grow()
		}
	}
	if st.buf == nil {
		st.buf = make([]byte, 0, unitStageBytes)
		st.all.bytes += unitStageBytes
	}
	if len(st.buf) == 0 {
		st.mf, st.from = mf, pos
	}
	st.buf = append(st.buf, b...)
	return nil
}

// putStagedRun is putMessagePositionInfo for a run of records of cq's
// queue, reqs[0] and each following one whose same flag (parsedBatch.same)
// is set, in the common case of recovery's scan: the queue's stage holds
// the units up to its last file's published end, and each record is
// dispatchable, lies past the queue's maxPhysicOffset and has the next
// queue index. It appends such units to the stage while they fit (in the
// stage's buffer and in the file), hands each record to the others after
// its unit, as dispatchRecovered does, and publishes the file's new end and
// the queue's maxPhysicOffset once for the run. It returns how many records
// every dispatcher took: the caller puts the next record, which did not
// qualify, through putMessagePositionInfo, which reports a gap or skips a
// replay as always; or, with err, record k, whose unit is in place, failed
// in one of the others.
func (cq *consumeQueue) putStagedRun(reqs []dispatchRequest, same []bool, others []dispatch.Dispatcher) (k int, err error) {
	st := cq.stage
	if st == nil || len(st.buf) == 0 || cq.noMaxPhysicOffsetCheck {
		return 0, nil
	}
	mf := st.mf
	pos := mf.wrote.Load()
	if st.from+int64(len(st.buf)) != pos {
		return 0, nil
	}
	maxPhy := cq.maxPhysicOffset.Load()
	next := (mf.fileFromOffset + pos) / CQUnitSize // the queue index of the unit at pos
	room := min(int64(cap(st.buf)-len(st.buf)), mf.fileSize-pos) / CQUnitSize
	n := int(min(int64(len(reqs)), int64(len(same)), room))
	put := 0
	for ; put < n && err == nil; put++ {
		req := &reqs[put]
		if (put > 0 && !same[put]) || !req.Dispatchable() || req.CommitLogOffset+int64(req.MsgSize) <= maxPhy ||
			req.ConsumeQueueOffset != next+int64(put) {
			break
		}
		maxPhy = req.CommitLogOffset + int64(req.MsgSize)
		st.buf = Unit{req.CommitLogOffset, req.MsgSize, req.TagsCode}.put(st.buf)
		for _, d := range others {
			if err = d.Dispatch(req); err != nil {
				break
			}
		}
	}
	if put > 0 {
		cq.maxPhysicOffset.Store(maxPhy)
		mf.publish(pos + int64(put)*CQUnitSize)
	}
	if err != nil {
		return put - 1, err
	}
	return put, nil
}

// grow doubles the empty buffer of a stage that filled, within the limits.
func (st *unitStage) grow() {
	n := 2 * cap(st.buf)
	if n > maxUnitStageBytes || st.all.bytes+n-cap(st.buf) > maxStagedBytes {
		return
	}
	st.all.bytes += n - cap(st.buf)
	st.buf = make([]byte, 0, n)
}

// flushStage writes the queue's staged units to their file.
func (cq *consumeQueue) flushStage() error {
	st := cq.stage
	if st == nil || len(st.buf) == 0 {
		return nil
	}
	var err error
	if w, ok := st.mf.seg.(backend.Pwriter); ok {
		st.pieces[0] = st.buf
		_, err = w.Pwrite(st.pieces[:], st.from)
		st.pieces[0] = nil
	} else {
		_, err = st.mf.seg.WriteAt(st.buf, st.from)
	}
	if err != nil {
		err = fmt.Errorf("write %s at %d: %w", st.mf.name, st.from, err)
	}
	st.buf, st.mf = st.buf[:0], nil
	return err
}
