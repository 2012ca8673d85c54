package raftlog

import (
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Open opens the store in opts.Dir, creating it, and rebuilds the index
// from the frames: the log is the frames up to the first that is torn,
// zero, out of order or not followed (a segment's end without a roll
// frame); stale segments after it are removed, stale bytes after it in its
// segment zeroed, and records past the last record frame truncated.
func Open(opts Options) (*Store, error) {
	s := &Store{fs: opts.FS, dir: opts.Dir, recs: opts.Records, segSize: opts.SegmentSize,
		brokenNoZeroTail: opts.brokenNoZeroTail, brokenNoRecordsCheck: opts.brokenNoRecordsCheck,
		syncsInOrder: opts.syncsInOrder}
	if s.fs == nil {
		return nil, errors.New("raftlog: no file system")
	}
	if s.segSize == 0 {
		s.segSize = DefaultSegmentSize
	}
	if s.segSize < 4*headerSize {
		return nil, fmt.Errorf("raftlog: segment size %d below %d", s.segSize, 4*headerSize)
	}
	if err := s.fs.MkdirAll(s.dir); err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// recovery is the scan's state.
type recovery struct {
	// recEnd is the records' end the last record or head frame gives,
	// -1 for none.
	recEnd int64
}

func (s *Store) recover() error {
	seqs, err := s.segmentSeqs()
	if err != nil {
		return err
	}
	rc := &recovery{recEnd: -1}
	for i, seq := range seqs {
		f, err := s.fs.Open(segName(s.dir, seq))
		if err != nil {
			return err
		}
		g := &segment{seq: seq, f: f}
		s.segs = append(s.segs, g)
		s.scan(g, rc)
		if !g.full {
			if err := s.dropStale(seqs[i+1:]); err != nil {
				return err
			}
			break
		}
	}
	if len(s.segs) > 0 && !s.brokenNoZeroTail {
		if err := s.zeroTail(); err != nil {
			return err
		}
	}
	end, err := s.dropUnbacked(rc.recEnd)
	if err != nil {
		return err
	}
	return s.reconcileRecords(end)
}

// dropUnbacked cuts the log at the first entry of the last StoreLogs call
// whose records are not on disk as its frame describes them (short, or
// another CRC), and returns the records' end the log then gives.
// StoreLogs syncs records and frames at once, so a power cut can keep a
// frame without its records; such a call never returned, and Raft never
// counted its entries. The calls before it returned, so their frames are
// not checked here: records missing under them are corruption, which
// reconcileRecords reports. Records the Records hold as committed are the
// state machine's and are not checked either.
func (s *Store) dropUnbacked(end int64) (int64, error) {
	if s.recs == nil || s.brokenNoRecordsCheck {
		return end, nil
	}
	from, err := s.lastAppendStart()
	if err != nil || from < 0 {
		return end, err
	}
	committed := int64(-1)
	if c, ok := s.recs.(Committed); ok {
		committed = c.Committed()
	}
	for i := from; i < len(s.ents); i++ {
		fr, err := s.ents[i].seg.frameAt(s.ents[i].pos)
		if err != nil {
			return 0, err
		}
		if fr.typ != frameRecord {
			continue
		}
		off, size := fr.recordBody()
		if off+int64(size) <= committed {
			continue
		}
		ok, err := s.recordsMatch(off, size, fr.recordsCRC())
		if err != nil {
			return 0, fmt.Errorf("raftlog: entry %d's records at %d: %w", fr.index, off, err)
		}
		if !ok {
			return off, s.deleteTail(s.first + uint64(i))
		}
	}
	return end, nil
}

// lastAppendStart returns the position in s.ents of the last frame flagged
// as the first of its StoreLogs call, or -1 for none.
func (s *Store) lastAppendStart() (int, error) {
	for i := len(s.ents) - 1; i >= 0; i-- {
		fr, err := s.ents[i].seg.frameAt(s.ents[i].pos)
		if err != nil {
			return 0, err
		}
		if fr.first {
			return i, nil
		}
	}
	return -1, nil
}

// recordsMatch reports whether the Records hold size bytes at off with
// the CRC sum. Records that end short do not match; a read that fails
// otherwise is an error, not a mismatch.
func (s *Store) recordsMatch(off int64, size int, sum uint32) (bool, error) {
	if off+int64(size) > s.recs.End() {
		return false, nil
	}
	b := make([]byte, size)
	if err := s.recs.ReadAt(b, off); err != nil {
		return false, err
	}
	return crc32.Checksum(b, castagnoli) == sum, nil
}

// segmentSeqs lists the segments, which must be numbered without a gap.
func (s *Store) segmentSeqs() ([]uint64, error) {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, name := range names {
		if seq, ok := parseSegName(name); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return nil, fmt.Errorf("%w: %s: segment %d follows %d", ErrCorrupt, s.dir, seqs[i], seqs[i-1])
		}
	}
	return seqs, nil
}

// scan reads g's frames into the index until the log or the segment ends.
func (s *Store) scan(g *segment, rc *recovery) {
	size := g.f.Size()
	for g.end < size {
		fr, n, err := decodeFrame(g.f.View(g.end, size-g.end))
		if err != nil || !s.follows(fr) {
			break
		}
		switch fr.typ {
		case frameRoll:
			g.full = true
		case frameHead:
			s.applyHead(fr.index)
			rc.recEnd = fr.headBody()
		default:
			if len(s.ents) == 0 {
				s.first = fr.index
			}
			s.ents = append(s.ents, entryRef{seg: g, pos: g.end})
			s.next = fr.index + 1
			g.lastIndex = fr.index
			if fr.typ == frameRecord {
				off, size := fr.recordBody()
				rc.recEnd = off + int64(size)
			}
		}
		g.end += int64(n)
		if g.full {
			break
		}
	}
	g.synced = g.end
}

// follows reports whether an entry frame continues the log: the next
// index (any, in a log that never held one).
func (s *Store) follows(fr frame) bool {
	if fr.typ != frameRecord && fr.typ != frameSide {
		return true
	}
	return s.next == 0 || fr.index == s.next
}

// applyHead drops the entries before first; in a log emptied earlier in
// the scan, it is where the next entry goes. Before any frame that set
// the next index (the segments before this one were compacted away), it
// only says where the log starts: the entry frames that follow have
// indexes from first on.
func (s *Store) applyHead(first uint64) {
	switch {
	case s.next == 0:
		s.first = first
	case len(s.ents) == 0 || first >= s.next:
		s.ents, s.first, s.next = nil, first, first
	case first > s.first:
		s.ents = s.ents[first-s.first:]
		s.first = first
	}
}

// dropStale removes the segments after the log's end, newest first.
func (s *Store) dropStale(seqs []uint64) error {
	for i := len(seqs) - 1; i >= 0; i-- {
		if err := s.fs.Remove(segName(s.dir, seqs[i])); err != nil {
			return err
		}
		if err := s.fs.SyncDir(s.dir); err != nil {
			return err
		}
	}
	return nil
}

// zeroTail zeroes whatever follows the last frame in the tail segment (a
// torn frame, frames that do not follow), so that new frames are never
// followed by stale ones.
func (s *Store) zeroTail() error {
	t := s.tail()
	rest := t.f.View(t.end, t.f.Size()-t.end)
	i := slices.IndexFunc(rest, func(b byte) bool { return b != 0 })
	if i < 0 {
		return nil
	}
	j := len(rest)
	for rest[j-1] == 0 {
		j--
	}
	end := t.end
	t.end += int64(j)
	return t.zeroFrom(end)
}

// reconcileRecords truncates the records past the end the frames give:
// they belong to a StoreLogs that never returned. Records short of it
// lost bytes that Raft counted, which is corruption. Records that are
// the state machine's (Committed) are kept.
func (s *Store) reconcileRecords(end int64) error {
	if s.recs == nil || end < 0 {
		return nil
	}
	have := s.recs.End()
	if c, ok := s.recs.(Committed); ok {
		end = max(end, min(c.Committed(), have))
	}
	switch {
	case have > end:
		return s.recs.Truncate(end)
	case have < end:
		return fmt.Errorf("%w: %s: the frames index records up to %d, the records end at %d", ErrCorrupt, s.dir, end, have)
	}
	return nil
}
