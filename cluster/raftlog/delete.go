package raftlog

import (
	"fmt"
)

// DeleteRange deletes entries min to max inclusive: a head of the log
// (compaction, or all of it after a snapshot install) or its tail (a
// suffix a new leader overwrites). Raft deletes nothing else.
func (s *Store) DeleteRange(min, max uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if len(s.ents) == 0 || min > max {
		return nil
	}
	last := s.first + uint64(len(s.ents)) - 1
	var err error
	switch {
	case max < s.first || min > last:
		return nil
	case min <= s.first:
		err = s.deleteHead(max + 1)
	case max >= last:
		if err := s.checkTail(min); err != nil {
			return err // nothing changed: the store stays writable
		}
		err = s.deleteTail(min)
	default:
		return fmt.Errorf("raftlog: delete of entries %d to %d inside the log %d to %d", min, max, s.first, last)
	}
	if err != nil {
		s.err = err
	}
	return err
}

// deleteHead makes first the log's first index: a durable head frame,
// then the removal of the segments that hold only earlier entries. The
// records stay: they are the state machine's.
func (s *Store) deleteHead(first uint64) error {
	if err := s.writeFrame(appendHead(nil, first, s.recordsEnd()), 0); err != nil {
		return err
	}
	if err := s.syncTail(); err != nil {
		return err
	}
	last := s.first + uint64(len(s.ents)) - 1
	if first > last {
		s.ents, s.next = nil, first
	} else {
		s.ents = s.ents[first-s.first:]
	}
	s.first = first
	// Oldest first, each removal durable before the next, so that the
	// segments left on disk never have a gap.
	for len(s.segs) > 1 && s.segs[0].lastIndex < first {
		g := s.segs[0]
		if err := s.removeSegment(g); err != nil {
			return err
		}
		s.segs = s.segs[1:]
	}
	return nil
}

// deleteTail drops the entries from min on: their frames are zeroed and
// synced, the segments after removed (newest first), and then the records
// truncated after the last kept entry. A crash in between leaves records
// past the last frame, which Open truncates.
func (s *Store) deleteTail(min uint64) error {
	cut := s.ents[min-s.first]
	recCut, err := s.firstRecordsFrom(min)
	if err != nil {
		return err
	}
	if err := cut.seg.zeroFrom(cut.pos); err != nil {
		return err
	}
	for len(s.segs) > 0 && s.tail() != cut.seg {
		if err := s.removeSegment(s.tail()); err != nil {
			return err
		}
		s.segs = s.segs[:len(s.segs)-1]
	}
	kept := s.ents[:min-s.first]
	s.ents, s.next = kept, min
	cut.seg.lastIndex = 0
	if len(kept) > 0 && kept[len(kept)-1].seg == cut.seg {
		cut.seg.lastIndex = min - 1
	}
	// The zeroed part may have held the head frame that set first; the
	// new one names the records' end after the truncation below.
	end := s.recordsEnd()
	if recCut >= 0 {
		end = recCut
	}
	if err := s.writeFrame(appendHead(nil, s.first, end), 0); err != nil {
		return err
	}
	if err := s.syncTail(); err != nil {
		return err
	}
	// At Open (dropUnbacked) the records may end short of the cut.
	if recCut >= 0 && recCut < s.recs.End() {
		if err := s.recs.Truncate(recCut); err != nil {
			return fmt.Errorf("raftlog: truncate records at %d: %w", recCut, err)
		}
	}
	return nil
}

// DeleteRecordsFrom deletes the log's tail from the first entry whose
// records end past off, as DeleteRange does a tail, when that entry's
// records start before before: a snapshot install calls it before it
// changes the records in [off, before) (truncated, or overwritten with
// the leader's), so that no frame is left indexing records that are no
// longer its entry's. It refuses a deletion of committed records
// (ErrCommitted).
func (s *Store) DeleteRecordsFrom(off, before int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	for i, r := range s.ents {
		fr, err := r.seg.frameAt(r.pos)
		if err != nil {
			return err
		}
		if fr.typ != frameRecord {
			continue
		}
		if recOff, size := fr.recordBody(); recOff+int64(size) > off {
			if recOff >= before {
				return nil
			}
			min := s.first + uint64(i)
			if err := s.checkTail(min); err != nil {
				return err
			}
			if err := s.deleteTail(min); err != nil {
				s.err = err
				return err
			}
			return nil
		}
	}
	return nil
}

// checkTail refuses, before anything is written, a deletion from min on
// whose records the Records hold as committed: deleteTail zeroes the
// frames before it truncates the records, and a truncation refused then
// would leave frames gone and records kept.
func (s *Store) checkTail(min uint64) error {
	c, ok := s.recs.(Committed)
	if !ok {
		return nil
	}
	recCut, err := s.firstRecordsFrom(min)
	if err != nil {
		return err
	}
	if committed := c.Committed(); recCut >= 0 && recCut < committed {
		return fmt.Errorf("%w: delete of entries from %d cuts the records at %d, below %d", ErrCommitted, min, recCut, committed)
	}
	return nil
}

// firstRecordsFrom returns the records offset of the first records entry
// at or after index, or -1 when there is none.
func (s *Store) firstRecordsFrom(index uint64) (int64, error) {
	for _, r := range s.ents[index-s.first:] {
		fr, err := r.seg.frameAt(r.pos)
		if err != nil {
			return 0, err
		}
		if fr.typ == frameRecord {
			off, _ := fr.recordBody()
			return off, nil
		}
	}
	return -1, nil
}

// removeSegment closes and removes g durably.
func (s *Store) removeSegment(g *segment) error {
	if err := g.f.Close(); err != nil {
		return err
	}
	if err := s.fs.Remove(segName(s.dir, g.seq)); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}
