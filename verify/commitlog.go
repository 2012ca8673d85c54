package verify

import (
	"bytes"
	"errors"
	"strings"

	"github.com/rocketstore/rocketstore/record"
)

// commitLog is the CommitLog as the checker sees it.
type commitLog struct {
	files *fileQueue
	// validEnd[i] is the offset up to which file i holds checked records;
	// units pointing past it cannot be matched.
	validEnd []int64
	// damaged are the ranges the scan resynchronised past, in order.
	damaged []damagedRange
}

// damagedRange is a stretch of the CommitLog [from, to) that holds no
// valid record, with an intact record at to.
type damagedRange struct{ from, to int64 }

// inDamage reports whether CommitLog offset off lies in a damaged range:
// a unit there is the damaged record's (or the engine's placeholder for
// it), and the damage is reported once, as a record violation.
func (l *commitLog) inDamage(off int64) bool {
	for _, d := range l.damaged {
		if d.from <= off && off < d.to {
			return true
		}
	}
	return false
}

// messageMagic is the MAGICCODE of a v1 message record, as stored.
var messageMagic = []byte{0xDA, 0xA3, 0x20, 0xA7}

// resync returns the first position at or after from in b (file bytes,
// the file starting at CommitLog offset base) holding an intact record:
// the magic code, PHYSICALOFFSET equal to its offset and a body matching
// its CRC (what recovery resumes at after damage).
func resync(b []byte, base, from int64) (int64, bool) {
	for from+4 < int64(len(b)) {
		k := bytes.Index(b[from+4:], messageMagic)
		if k < 0 {
			return 0, false
		}
		q := from + int64(k)
		if _, err := record.Check(b[q:], base+q, true); err == nil {
			return q, true
		}
		from = q + 1
	}
	return 0, false
}

func (c *checker) openCommitLog() error {
	q, err := c.openFileQueue(commitLogDir, c.opts.CommitLogFileSize, 1)
	if err != nil {
		return err
	}
	c.log = &commitLog{files: q, validEnd: make([]int64, len(q.files))}
	c.rep.CommitLogFiles, c.rep.CommitLogFileSize = len(q.files), q.size
	c.rep.MinOffset = q.minOffset()
	c.rep.MaxOffset = c.rep.MinOffset
	return nil
}

// scanCommitLog checks every record of every file, in order, and matches
// each dispatchable record against its ConsumeQueue unit.
func (c *checker) scanCommitLog() {
	ended := false // the data ended (zero bytes) in an earlier file
	for i, f := range c.log.files.files {
		b := f.seg.View(0, c.log.files.size)
		if ended {
			// Recovery drops everything after the first hole, so bytes
			// here would be lost or, worse, resurrected.
			if j := firstNonZero(b); j >= 0 {
				c.violation(KindTail, f.name, int64(j), "data after the end of the commitlog at offset %d", c.rep.MaxOffset)
			}
			c.log.validEnd[i] = f.from
			c.progress.advance(int64(len(b)))
			continue
		}
		start := c.progress.done
		end, zeros := c.scanFile(f, b)
		c.log.validEnd[i] = f.from + end
		ended = zeros
		// scanFile counted the records; count the rest of the file.
		c.progress.advance(int64(len(b)) - (c.progress.done - start))
	}
}

// scanFile checks the records of one file. It returns the position after
// the last good record and whether the data ended there in zero bytes.
func (c *checker) scanFile(f segFile, b []byte) (end int64, zeros bool) {
	size := int64(len(b))
	for pos := int64(0); ; {
		if pos == size {
			c.violation(KindBlank, f.name, pos, "file is full but does not end with a BLANK record")
			return pos, false
		}
		info, err := record.Check(b[pos:], -1, false)
		switch {
		case errors.Is(err, record.ErrNoRecord):
			if j := firstNonZero(b[pos:]); j >= 0 {
				c.violation(KindTail, f.name, pos+int64(j), "non-zero bytes after the end of the data at %d", f.from+pos)
			}
			return pos, true
		case err != nil:
			next, ok := resync(b, f.from, pos+1)
			if !ok {
				c.violation(KindRecord, f.name, pos, "%s; no intact record follows in the file: the rest of it is not checked", recordDetail(err))
				return pos, false
			}
			// Recovery skips the damage the same way and keeps what
			// follows: check it, or every unit after the damage would be
			// reported for a record the scan never reached.
			c.violation(KindRecord, f.name, pos, "%s; %d damaged bytes, the next intact record is at %d", recordDetail(err), next-pos, f.from+next)
			c.log.damaged = append(c.log.damaged, damagedRange{from: f.from + pos, to: f.from + next})
			c.progress.advance(next - pos)
			pos = next
			continue
		case info.Blank:
			if pos+int64(info.Size) != size {
				c.violation(KindBlank, f.name, pos, "BLANK record of %d bytes ends at %d, not at the end of the file (%d)",
					info.Size, pos+int64(info.Size), size)
				return pos, false
			}
			c.rep.Blanks++
			c.rep.MaxOffset = f.from + size
			return size, false
		}
		c.checkRecord(f, pos, &info)
		pos += int64(info.Size)
		c.progress.advance(int64(info.Size))
	}
}

// checkRecord checks the fields of a structurally valid message record at
// pos of f and its ConsumeQueue unit.
func (c *checker) checkRecord(f segFile, pos int64, info *record.Info) {
	off := f.from + pos
	c.rep.Records++
	if info.PhysicalOffset != off {
		c.violation(KindPhysicalOffset, f.name, pos, "PHYSICALOFFSET %d, want %d (stale or misplaced bytes)", info.PhysicalOffset, off)
	}
	crc := record.BodyCRC(info.Body)
	if crc != info.BodyCRC {
		c.violation(KindCRC, f.name, pos, "BODYCRC %08x, body hashes to %08x", info.BodyCRC, crc)
	}
	// Stored under the put lock, so never decreasing; abnormal recovery
	// picks its start file by these timestamps.
	if info.StoreTimestamp < c.rep.LastStoreTimestamp {
		c.violation(KindRecord, f.name, pos, "STORETIMESTAMP %d is before the previous record's %d", info.StoreTimestamp, c.rep.LastStoreTimestamp)
	}
	c.rep.LastStoreTimestamp = max(c.rep.LastStoreTimestamp, info.StoreTimestamp)
	c.rep.MaxOffset = off + int64(info.Size)
	if !dispatchable(info.SysFlag) {
		return
	}
	c.rep.Dispatchable++
	c.matchRecord(f, pos, info, crc != info.BodyCRC)
}

// dispatchable reports whether a record belongs in a ConsumeQueue:
// prepared and rolled-back transaction records do not.
func dispatchable(sysFlag int32) bool {
	t := record.TransactionType(sysFlag)
	return t != record.TransactionPrepared && t != record.TransactionRollback
}

// matchRecord checks that the record's queue holds, at the record's queue
// offset, a unit pointing at it, and marks that unit as matched. For a
// damaged record (damaged set: its body fails the CRC, reported already)
// the unit may be the engine's placeholder: pointing at it with tags code
// 0, which keeps the queue offset consumed while consumers skip it.
func (c *checker) matchRecord(f segFile, pos int64, info *record.Info, damaged bool) {
	if mark, ok := c.deleted[string(info.Topic)]; ok && f.from+pos < mark {
		return // the topic was deleted after this record: no queue is right
	}
	q := c.queues[string(info.Topic)][info.QueueID]
	if q == nil {
		c.violation(KindMissing, f.name, pos, "%s/%d has no consume queue (record has queue offset %d)",
			info.Topic, info.QueueID, info.QueueOffset)
		return
	}
	idx := info.QueueOffset
	u, ok := q.unit(idx)
	if !ok {
		c.violation(KindMissing, f.name, pos, "queue offset %d is not in consume queue %s/%d (it holds %d..%d)",
			idx, q.topic, q.id, q.prefix, q.end)
		return
	}
	want := unit{offset: f.from + pos, size: info.Size, tagsCode: c.tagsCode(info)}
	if damaged && u.offset == want.offset && u.size > 0 && u.tagsCode == 0 {
		q.mark(idx)
		return
	}
	if u != want {
		c.violation(KindMissing, f.name, pos, "unit %d of %s/%d is %v, want %v", idx, q.topic, q.id, u, want)
		return
	}
	q.mark(idx)
}

// recordDetail is a decoding error as a violation's detail: without the
// record package's prefix, which the violation's kind already says.
func recordDetail(err error) string { return strings.TrimPrefix(err.Error(), "record: ") }
