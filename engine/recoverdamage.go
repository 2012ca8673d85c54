package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/record"
)

// DamagePolicy says what recovery does with a damaged CommitLog record
// that intact records follow but that it cannot prove to lie in the part
// of the log that was durable before the crash: it may be damage, or a
// record torn by the crash with later pages that happened to reach the
// disk first.
type DamagePolicy int

const (
	// DamageRefuse (the default) makes Open fail with ErrUndecidableDamage,
	// naming the file and offset, before anything is truncated.
	DamageRefuse DamagePolicy = iota
	// DamageTruncate cuts the CommitLog at the damaged record, dropping
	// everything after it (RocketMQ's behaviour).
	DamageTruncate
	// DamageSkip keeps the records after it and skips the damaged one, as
	// recovery does for damage it can prove.
	DamageSkip
)

// ErrUndecidableDamage reports a damaged CommitLog record followed by
// intact records written after the last checkpoint, with DamageRefuse in
// effect. It wraps ErrCorruptStore.
var ErrUndecidableDamage = fmt.Errorf("%w: damaged record followed by intact records", ErrCorruptStore)

// DamagedRange is a stretch of the CommitLog that recovery found damaged
// (a record failing its checks) with intact records after it. The bytes
// stay on disk for inspection; GetMessage never returns them.
type DamagedRange struct {
	// File is the CommitLog file holding the start of the range.
	File string
	// Offset is the CommitLog offset of the damaged record; End the
	// offset of the next intact record (or file) after it.
	Offset, End int64
	// Reason is the check the record failed.
	Reason error
}

// onDamage decides what the scan does with the record at files[i] position
// pos that failed with cause: resume at a later CommitLog offset (the
// damage is skipped and recorded), stop there (truncate: nothing intact
// follows, a torn tail or the clean end of the data), or fail Open.
//
// A record's own PHYSICALOFFSET and body CRC tell an intact record from
// stale or damaged bytes, so the first offset after pos holding an intact
// record is where the log resumes. Whether skipping is right depends on
// where the damage lies: after a clean shutdown everything was synced, so
// it is damage; after a crash, a record older than the checkpoint's
// physicMsgTimestamp was synced before the crash (the checkpoint is never
// ahead of the synced log), so the damage before it is damage too. Past
// that point a power cut can leave unwritten pages followed by written
// ones, and only the operator can choose (Config.OnUndecidableDamage).
func (s *Store) onDamage(files []*mappedFile, i int, pos int64, cause error) (resume int64, truncate bool, err error) {
	j, at, ts, ok := resync(files, i, pos+1)
	mf := files[i]
	off := mf.fileFromOffset + pos
	if !ok {
		end, synced := s.syncedTail(mf, pos)
		if !synced || errors.Is(cause, record.ErrNoRecord) || s.cfg.hooks.TornSyncedTail {
			// The end of the data, or a tail torn by the crash.
			return 0, true, nil
		}
		// A damaged last record that was synced (before a clean stop,
		// or before the checkpoint's time) is damage, not a torn
		// write, and an acknowledged message: it is kept and skipped
		// as damage in the middle of the log is.
		s.recovery.Damaged = append(s.recovery.Damaged, DamagedRange{File: mf.name, Offset: off, End: end, Reason: cause})
		s.cfg.Logger.Error("damaged last commitlog record, synced before the stop: kept and skipped, never delivered; repair it from a replica",
			"file", mf.name, "position", pos, "offset", off, "length", end-off, "reason", cause)
		return end, false, nil
	}
	resume = files[j].fileFromOffset + at
	physic, _, _ := s.checkpoint.Timestamps()
	proven := !s.recovery.Abnormal || (s.recovery.CheckpointValid && ts > 0 && ts < physic)
	if proven && pos == 0 && j > i && mf == s.commitLog.q.firstFile() && allZero(mf.seg.View(0, mf.fileSize)) {
		// A head file that retention zeroed and removed, whose removal a
		// crash undid (the records after it were synced, so its zeros
		// were too): its messages were deleted on purpose. Skipped,
		// not reported as damage; retention removes it again.
		s.cfg.Logger.Info("commitlog head file is all zero (a removal undone by a crash); skipped", "file", mf.name)
		s.recovery.revivedHead = append(s.recovery.revivedHead, DamagedRange{File: mf.name, Offset: off, End: resume})
		return resume, false, nil
	}
	if !proven && tornWrite(files, i, pos, j, at) {
		// Bytes that read as zero where a record must be are the mark of
		// pages that never reached the disk (a fresh file is zero), not
		// of a flipped bit: the crash tore the tail and the pages after
		// it reached the disk first. Nothing there was acknowledged as
		// synced (syncs go in log order), so the tail goes, as in
		// RocketMQ.
		return 0, true, nil
	}
	if !proven {
		switch s.cfg.OnUndecidableDamage {
		case DamageTruncate:
			s.recovery.TruncatedAtDamage = true
			s.cfg.Logger.Error("damaged commitlog record followed by intact records written after the last checkpoint; truncating there as configured",
				"file", mf.name, "position", pos, "offset", off, "nextIntact", resume, "reason", cause)
			return 0, true, nil
		case DamageSkip:
		default:
			return 0, false, fmt.Errorf("%w: %s position %d (commitlog offset %d): %v; intact records follow at commitlog offset %d "+
				"but were written after the last checkpoint, so this may be a write torn by the crash or damage. Nothing was truncated. "+
				"To open the store, choose: truncate there (drops everything after it, RocketMQ's behaviour) or skip the damaged record "+
				"(Config.OnUndecidableDamage; serve: recoverUndecidableDamage: truncate|skip)",
				ErrUndecidableDamage, mf.name, pos, off, cause, resume)
		}
	}
	s.recovery.Damaged = append(s.recovery.Damaged, DamagedRange{File: mf.name, Offset: off, End: resume, Reason: cause})
	s.cfg.Logger.Error("damaged commitlog record skipped: it is never delivered, the records after it are kept",
		"file", mf.name, "position", pos, "offset", off, "length", resume-off, "reason", cause)
	return resume, false, nil
}

// syncedTail reports whether the damaged record at position pos of mf,
// with no intact record after it, was synced before the store stopped,
// and where it ends. Its header must read (TOTALSIZE within the file,
// PHYSICALOFFSET its position, a store timestamp) and its last 8 bytes
// must not be zero (an intact record ends with its topic and properties:
// zeros there are bytes never written, or lost). Then it was synced if its
// store timestamp is at most the checkpoint's physicMsgTimestamp after a
// clean stop (Close synced everything), below it after a crash (records
// of the checkpoint's own millisecond may postdate its sync). The same
// bytes and checkpoint give the same answer before and after a kill
// during the next run, except at that millisecond.
func (s *Store) syncedTail(mf *mappedFile, pos int64) (end int64, synced bool) {
	b := mf.seg.View(0, mf.fileSize)
	if pos+int64(record.FixedOverhead) > int64(len(b)) || !s.recovery.CheckpointValid {
		return 0, false
	}
	size := int64(int32(be32(b[pos:])))
	if size < record.FixedOverhead || pos+size > int64(len(b)) || allZero(b[pos+size-8:pos+size]) {
		return 0, false
	}
	if int64(binary.BigEndian.Uint64(b[pos+28:])) != mf.fileFromOffset+pos {
		return 0, false
	}
	tsAt := pos + 56
	if int32(be32(b[pos+36:]))&record.FlagBornHostV6 != 0 {
		tsAt += 12
	}
	ts := int64(binary.BigEndian.Uint64(b[tsAt:]))
	physic, _, _ := s.checkpoint.Timestamps()
	if ts <= 0 || ts > physic || (s.recovery.Abnormal && ts == physic) {
		return 0, false
	}
	if s.recovery.Abnormal && !s.cfg.hooks.TrustTornTimestamp && tornAcross(b[pos:pos+size], mf.fileFromOffset+pos, ts, s.recovery.lastStoreTimestamp) {
		return 0, false
	}
	return mf.fileFromOffset + pos + size, true
}

// tornAcross reports signs that a record whose header and last bytes
// survived a crash lost sectors between them, so that its store timestamp
// ts may be made of new bytes and bytes never written (a tear inside the
// timestamp reads as an earlier time, below the checkpoint's, and the
// torn record would pass for a synced one). Store times do not go back
// within the CommitLog, so a timestamp below the previous record's
// (prev) is torn; and a sector-aligned run of diskSector zero bytes
// inside the record is a sector that never reached the disk. Either sign
// makes the record a torn tail, cut off as RocketMQ does. A record that
// really holds a zero sector (a binary body) and is damaged after a
// crash is cut off too: the two cannot be told apart.
func tornAcross(rec []byte, off, ts, prev int64) bool {
	if ts < prev {
		return true
	}
	for at := (off + diskSector - 1) / diskSector * diskSector; at+diskSector <= off+int64(len(rec)); at += diskSector {
		if allZero(rec[at-off : at-off+diskSector]) {
			return true
		}
	}
	return false
}

// diskSector is the smallest unit a disk writes whole (512 bytes; a 4 KiB
// sector is eight of them, all lost together).
const diskSector = 512

var (
	magicMessage = []byte{0xDA, 0xA3, 0x20, 0xA7}
	offMagic     = 4
)

// resync returns the first position at or after files[i] position from
// holding an intact record (magic code, PHYSICALOFFSET equal to its
// position, body CRC), as a file index and position, with the record's
// store timestamp; ok is false when no intact record follows.
func resync(files []*mappedFile, i int, from int64) (j int, at int64, ts int64, ok bool) {
	for j = i; j < len(files); j++ {
		mf := files[j]
		b := mf.seg.View(0, mf.fileSize)
		start := int64(0)
		if j == i {
			start = from
		}
		for start+int64(offMagic) < int64(len(b)) {
			k := bytes.Index(b[start+int64(offMagic):], magicMessage)
			if k < 0 {
				break
			}
			q := start + int64(k)
			info, err := record.Check(b[q:], mf.fileFromOffset+q, true)
			if err == nil {
				return j, q, info.StoreTimestamp, true
			}
			start = q + 1
		}
	}
	return 0, 0, 0, false
}

// recordDamage makes the dispatcher jump over the ranges recovery skipped
// and keeps them sorted for damaged. In a store of replicated records a
// range that starts at or past the commit point is not jumped over: it
// is dispatched, as every record there, once the commit point moves past
// it, which the caller does only once it is repaired (RepairDamaged).
func (s *Store) recordDamage() {
	sort.Slice(s.recovery.Damaged, func(a, b int) bool { return s.recovery.Damaged[a].Offset < s.recovery.Damaged[b].Offset })
	for _, d := range append(s.recovery.Damaged, s.recovery.revivedHead...) {
		if s.commitLog.committed(d.Offset) {
			s.reput.Skip(d.Offset, d.End)
		}
	}
}

// damaged reports whether CommitLog offset off lies in a damaged range
// not repaired since (engineops.Ops.RepairDamaged).
func (s *Store) damaged(off int64) bool {
	d := s.recovery.Damaged
	k := sort.Search(len(d), func(i int) bool { return d[i].End > off })
	return k < len(d) && d[k].Offset <= off && !s.repairs.repaired(d[k].Offset)
}

// damagedBefore returns the damaged ranges in [from, to), for the units a
// ConsumeQueue misses because their records were damaged.
func (s *Store) damagedBetween(from, to int64) []DamagedRange {
	var out []DamagedRange
	for _, d := range s.recovery.Damaged {
		if d.Offset >= from && d.Offset < to {
			out = append(out, d)
		}
	}
	return out
}

// errQueueGap reports a unit whose index is past the queue's end.
var errQueueGap = errors.New("engine: consume queue gap")

// fillDamagedUnits writes the units a queue misses before req because
// their records were damaged: each points at one damaged range (GetMessage
// skips them), so the queue keeps one unit per queue offset. When fewer
// damaged ranges lie between the queue's last unit and req than units are
// missing, nothing is written and the gap stays an error.
func (s *Store) fillDamagedUnits(cq *consumeQueue, req *dispatch.Request) error {
	cur := cq.MaxOffsetInQueue()
	missing := req.ConsumeQueueOffset - cur
	ranges := s.damagedBetween(max(cq.MaxPhysicOffset(), 0), req.CommitLogOffset)
	if missing <= 0 || int64(len(ranges)) < missing {
		return fmt.Errorf("%w: consume queue %s/%d misses units %d..%d and only %d damaged records lie before commitlog offset %d",
			ErrCorruptStore, cq.topic, cq.queueID, cur, req.ConsumeQueueOffset-1, len(ranges), req.CommitLogOffset)
	}
	for n, d := range ranges[int64(len(ranges))-missing:] {
		size := int32(min(d.End-d.Offset, math.MaxInt32-1))
		if _, err := cq.putMessagePositionInfo(d.Offset, size, 0, cur+int64(n)); err != nil {
			return err
		}
	}
	s.cfg.Logger.Error("consume queue units for damaged records point at the damage and are skipped by consumers",
		"topic", cq.topic, "queueId", cq.queueID, "fromOffset", cur, "count", missing)
	return nil
}

// tornWrite reports whether the damaged bytes from files[i] position pos to
// the next intact record (files[j] position at) hold, within some 512-byte
// sector, a stretch of at least 8 zero bytes: what a sector or page that
// was never written looks like in a preallocated file.
func tornWrite(files []*mappedFile, i int, pos int64, j int, at int64) bool {
	mf := files[i]
	end := mf.fileSize
	if j == i {
		end = at
	}
	b := mf.seg.View(0, mf.fileSize)
	for sec := pos - pos%record.SectorSize; sec < end; sec += record.SectorSize {
		lo, hi := max(sec, pos), min(sec+record.SectorSize, end)
		if hi-lo >= 8 && allZero(b[lo:hi]) {
			return true
		}
	}
	return false
}
