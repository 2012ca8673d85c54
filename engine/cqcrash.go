package engine

// truncateAfterCrash is truncateDirtyLogicFiles after an abnormal exit: it
// keeps the units that are known to be the queue's own and durable and
// drops everything from the first unit that is not.
//
// Only the units for records before phy (the scan start, which the
// checkpoint says is durable in the ConsumeQueues) are kept; recovery
// replays the rest from the CommitLog. After a power cut, every page of
// units past the last ConsumeQueue flush may hold anything: zeros (never
// written back), its real units (written back by the kernel in any order,
// so a later page may be there while an earlier one is not), or, on a disk
// that exposes freed blocks (crashsim's ReuseFreedBlocks), a block of a
// deleted file: another ConsumeQueue's units or CommitLog bytes. So the
// last file cannot vouch for the files before it, as it does in RocketMQ.
//
// The walk starts at an anchor: the last file whose first unit points at a
// record before phy that check confirms is this queue's, at this index (a
// freed block cannot fake that; units below the CommitLog minimum cannot
// be checked and never anchor). The units before an anchor index records
// older than phy, which the checkpoint covers. From the anchor (or the
// first file, when no file anchors) units are kept while each is valid,
// ends at or before phy, points past the unit before it and passes check;
// the queue is cut at the first one that does not. The walk covers the
// files written since the scan start, not the whole queue.
func (cq *consumeQueue) truncateAfterCrash(phy int64, check *unitChecker) error {
	files := cq.q.snapshot()
	if len(files) == 0 {
		cq.maxPhysicOffset.Store(-1)
		return nil
	}
	start := 0
	for i := len(files) - 1; i > 0; i-- {
		mf := files[i]
		if mf.wrote.Load() < CQUnitSize {
			continue
		}
		u := DecodeUnit(mf.seg.View(0, CQUnitSize))
		if u.valid() && u != blankUnit && u.CommitLogOffset+int64(u.Size) <= phy && check.verified(u, mf.fileFromOffset/CQUnitSize) {
			start = i
			break
		}
	}
	prevEnd := cq.prevMaxPhysicOffset(files[start])
	maxPhy := prevEnd
	for i := start; i < len(files); i++ {
		mf := files[i]
		b := mf.seg.View(0, mf.wrote.Load())
		for pos := int64(0); pos+CQUnitSize <= int64(len(b)); pos += CQUnitSize {
			u := DecodeUnit(b[pos:])
			keep := u.valid() && (u == blankUnit || u.CommitLogOffset+int64(u.Size) <= phy)
			switch {
			case !keep:
			case u == blankUnit:
				// Blank fillers only precede a queue's first unit.
				keep = prevEnd < 0
			default:
				keep = u.CommitLogOffset >= prevEnd && check.ok(u, (mf.fileFromOffset+pos)/CQUnitSize)
			}
			if !keep {
				return cq.cutAfterCrash(mf.fileFromOffset+pos, maxPhy)
			}
			if u != blankUnit {
				maxPhy = u.CommitLogOffset + int64(u.Size)
				prevEnd = maxPhy
			}
		}
	}
	cq.maxPhysicOffset.Store(maxPhy)
	if cq.keepEmptyLastFile {
		return nil
	}
	return cq.dropEmptyLastFile()
}

// cutAfterCrash truncates the queue at byte offset at, dropping a last file
// left empty (unless it is the only one), as truncateDirtyLogicFiles does.
func (cq *consumeQueue) cutAfterCrash(at, maxPhy int64) error {
	cq.maxPhysicOffset.Store(maxPhy)
	if err := cq.q.truncateDirtyFiles(at); err != nil {
		return err
	}
	return cq.dropEmptyLastFile()
}

// dropEmptyLastFile removes the queue's last file when it holds no unit and
// is not the only file (the queue's offsets stay: the file before it is
// full). A cut at a file's start zeroes and syncs the file before removing
// it, so a power cut in between leaves it behind, all zeros, and the
// recovery that follows finds nothing to cut: it must drop the file too,
// or a recovery interrupted and redone would keep a file that one recovery
// removes. An only file stays, empty or not: it holds the queue's next
// offset once retention has removed the files before it.
func (cq *consumeQueue) dropEmptyLastFile() error {
	if files := cq.q.snapshot(); len(files) > 1 && files[len(files)-1].wrote.Load() == 0 {
		return cq.q.deleteLastFile()
	}
	return nil
}
