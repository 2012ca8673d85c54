package raftlog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/backend"
)

// DefaultSegmentSize is the size of a frame segment file.
const DefaultSegmentSize = 4 << 20

// Options configures a Store.
type Options struct {
	// FS holds the frame segments, in Dir.
	FS  backend.FS
	Dir string
	// Records holds the records entries' bytes. Nil stores every entry
	// as a side entry (the whole entry in its frame).
	Records Records
	// SegmentSize is the size of a frame segment (DefaultSegmentSize).
	SegmentSize int64

	// brokenNoZeroTail is the broken variant of the crash tests: Open
	// leaves what follows the last frame as it is.
	brokenNoZeroTail bool
	// brokenNoRecordsCheck is the broken variant in which Open trusts
	// the frames of the last StoreLogs without checking their records.
	brokenNoRecordsCheck bool
	// syncsInOrder, when set, makes StoreLogs sync the records and the
	// frames one after the other instead of at once, the records first
	// when it returns true: the crash tests draw the order, so that a
	// seed replays the same file-system operations.
	syncsInOrder func() bool
}

// ErrClosed reports use of a closed Store.
var ErrClosed = errors.New("raftlog: store closed")

// Store is a raft.LogStore over frame segments and Records.
type Store struct {
	fs      backend.FS
	dir     string
	recs    Records
	segSize int64

	mu sync.RWMutex
	// segs are the frame segments, oldest first; the last is the tail.
	segs []*segment
	// ents[i] is where the frame of entry first+i is.
	ents  []entryRef
	first uint64
	// next is the index the next entry must have; 0 while the log has
	// never held one (any index is then accepted).
	next                                   uint64
	brokenNoZeroTail, brokenNoRecordsCheck bool
	syncsInOrder                           func() bool
	// err is the first write error: after it the state on disk is
	// unknown, so the store refuses further writes.
	err    error
	closed bool

	stats statCounters
}

// statCounters are what Stats reports.
type statCounters struct {
	appends, entries, entryBytes, frameBytes, recordBytes, syncs atomic.Uint64
}

// Stats counts what a Store wrote since it opened.
type Stats struct {
	// Appends is the number of StoreLogs calls that wrote entries.
	Appends uint64
	// Entries is the number of entries written, EntryBytes their Data
	// and Extensions.
	Entries    uint64
	EntryBytes uint64
	// FrameBytes is what the frames took in the segments (the whole of
	// a side entry; a records entry's metadata), RecordBytes what went
	// to the Records.
	FrameBytes  uint64
	RecordBytes uint64
	// Syncs counts the syncs of frame segments and of the Records.
	Syncs uint64
}

// Stats returns what the store wrote since it opened.
func (s *Store) Stats() Stats {
	c := &s.stats
	return Stats{Appends: c.appends.Load(), Entries: c.entries.Load(), EntryBytes: c.entryBytes.Load(),
		FrameBytes: c.frameBytes.Load(), RecordBytes: c.recordBytes.Load(), Syncs: c.syncs.Load()}
}

// entryRef locates an entry's frame.
type entryRef struct {
	seg *segment
	pos int64
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// FirstIndex returns the first index in the log, 0 when it is empty.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	if len(s.ents) == 0 {
		return 0, nil
	}
	return s.first, nil
}

// LastIndex returns the last index in the log, 0 when it is empty.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	if len(s.ents) == 0 {
		return 0, nil
	}
	return s.first + uint64(len(s.ents)) - 1, nil
}

// IsMonotonic reports that the store refuses gaps, so that Raft empties it
// after installing a snapshot (raft.MonotonicLogStore).
func (s *Store) IsMonotonic() bool { return true }

// GetLog reads entry index into l; raft.ErrLogNotFound when the log does
// not hold it or its records are gone.
func (s *Store) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(s.ents) == 0 || index < s.first || index-s.first >= uint64(len(s.ents)) {
		return raft.ErrLogNotFound
	}
	ref := s.ents[index-s.first]
	fr, err := ref.seg.frameAt(ref.pos)
	if err != nil {
		return err
	}
	if fr.typ == frameSide {
		fr.sideLog(l)
		return nil
	}
	off, size := fr.recordBody()
	data := make([]byte, RecordsHeaderSize+size)
	data[0] = KindRecords
	putOffset(data, off)
	if err := s.recs.ReadAt(data[RecordsHeaderSize:], off); err != nil {
		if errors.Is(err, ErrGone) {
			return raft.ErrLogNotFound
		}
		return fmt.Errorf("raftlog: entry %d's records at %d: %w", index, off, err)
	}
	*l = raft.Log{Index: fr.index, Term: fr.term, Type: raft.LogCommand, Data: data, AppendedAt: appendedAtTime(fr.appendedAt)}
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must follow the last one without a gap
// (or start anywhere in an empty log), and returns once they are durable.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	if err := s.checkAppend(logs); err != nil {
		return err
	}
	if err := s.appendLocked(logs); err != nil {
		s.err = err
		return err
	}
	return nil
}

func (s *Store) writable() error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		return fmt.Errorf("raftlog: refused after an earlier write error: %w", s.err)
	}
	return nil
}

// checkAppend refuses gaps, and records that do not follow the Records'
// end, before anything is written.
func (s *Store) checkAppend(logs []*raft.Log) error {
	want := s.next
	if len(s.ents) == 0 {
		want = logs[0].Index
	}
	end := int64(-1)
	if s.recs != nil {
		end = s.recs.End()
	}
	for _, l := range logs {
		if l.Index != want {
			return fmt.Errorf("raftlog: entry %d stored where %d is next", l.Index, want)
		}
		want++
		if off, recs, ok := recordsOf(l); ok && s.recs != nil {
			if off != end {
				return fmt.Errorf("raftlog: entry %d's records at %d, the records end at %d", l.Index, off, end)
			}
			end += int64(len(recs))
		}
	}
	return nil
}

// appendLocked writes the records and the frames, then syncs both at
// once: an append waits for one sync, not two in a row. A power cut may
// then leave a frame on disk without its records (or records without
// their frame); the frames of each call are flagged from its first, and
// Open checks the records of the last call's frames (dropUnbacked).
func (s *Store) appendLocked(logs []*raft.Log) error {
	recStart := s.recordsEnd()
	wrote, err := s.appendRecords(logs)
	if err != nil {
		return err
	}
	var buf []byte
	if len(s.ents) == 0 && logs[0].Index != s.next {
		// A log emptied by compaction (or a new one) restarting at
		// another index: the head frame tells recovery where.
		// It names the records' end before this call's records,
		// which its own record frames then extend.
		buf = appendHead(buf, logs[0].Index, recStart)
		if err := s.writeFrame(buf, 0); err != nil {
			return err
		}
	}
	refs := make([]entryRef, 0, len(logs))
	for i, l := range logs {
		_, _, ok := recordsOf(l)
		buf = appendFrame(buf[:0], l, ok && s.recs != nil, i == 0)
		if err := s.writeFrame(buf, l.Index); err != nil {
			return err
		}
		tail := s.tail()
		refs = append(refs, entryRef{seg: tail, pos: tail.end - int64(len(buf))})
	}
	if err := s.syncBoth(wrote); err != nil {
		return err
	}
	s.stats.appends.Add(1)
	s.stats.entries.Add(uint64(len(logs)))
	for _, l := range logs {
		s.stats.entryBytes.Add(uint64(len(l.Data) + len(l.Extensions)))
	}
	if len(s.ents) == 0 {
		s.first = logs[0].Index
	}
	s.ents = append(s.ents, refs...)
	s.next = logs[len(logs)-1].Index + 1
	return nil
}

// appendRecords appends the records entries' bytes, unsynced, and
// reports whether it wrote any.
func (s *Store) appendRecords(logs []*raft.Log) (bool, error) {
	if s.recs == nil {
		return false, nil
	}
	wrote := false
	for _, l := range logs {
		if off, recs, ok := recordsOf(l); ok {
			if err := s.recs.Append(recs, off); err != nil {
				return false, fmt.Errorf("raftlog: entry %d's records at %d: %w", l.Index, off, err)
			}
			s.stats.recordBytes.Add(uint64(len(recs)))
			wrote = true
		}
	}
	return wrote, nil
}

// syncBoth syncs the records (when records were written) and the tail's
// frames at once, so that an append costs one sync's wait.
func (s *Store) syncBoth(records bool) error {
	if !records {
		return s.syncTail()
	}
	if s.syncsInOrder != nil {
		if s.syncsInOrder() {
			return errors.Join(s.syncRecords(), s.syncTail())
		}
		return errors.Join(s.syncTail(), s.syncRecords())
	}
	done := make(chan error, 1)
	go func() { done <- s.syncRecords() }()
	return errors.Join(s.syncTail(), <-done)
}

// syncRecords syncs the Records, counting the sync.
func (s *Store) syncRecords() error {
	s.stats.syncs.Add(1)
	if err := s.recs.Sync(); err != nil {
		return fmt.Errorf("raftlog: sync records: %w", err)
	}
	return nil
}

func (s *Store) tail() *segment { return s.segs[len(s.segs)-1] }

// syncTail syncs the tail segment's unsynced frames, counting the sync.
func (s *Store) syncTail() error {
	t := s.tail()
	if t.end <= t.synced {
		return nil
	}
	s.stats.syncs.Add(1)
	return t.sync()
}

func (s *Store) recordsEnd() int64 {
	if s.recs == nil {
		return -1
	}
	return s.recs.End()
}

// writeFrame appends one frame (of entry index, 0 for a marker) to the
// tail, rolling to a new segment when it does not fit.
func (s *Store) writeFrame(b []byte, index uint64) error {
	if len(s.segs) == 0 || !s.tail().fits(len(b)) {
		if err := s.roll(len(b)); err != nil {
			return err
		}
	}
	t := s.tail()
	if err := t.write(b); err != nil {
		return err
	}
	s.stats.frameBytes.Add(uint64(len(b)))
	if index > t.lastIndex {
		t.lastIndex = index
	}
	return nil
}

// roll closes the tail with a roll frame and starts a segment that holds
// at least n bytes. The roll frame and the tail's frames are synced, and
// the new file's directory entry too, before any frame goes to the new
// segment: recovery follows a segment only past a durable roll frame.
func (s *Store) roll(n int) error {
	seq := uint64(1)
	if len(s.segs) > 0 {
		t := s.tail()
		if !t.full {
			if err := t.write(appendRoll(nil)); err != nil {
				return err
			}
			t.full = true
		}
		if err := t.sync(); err != nil {
			return err
		}
		seq = t.seq + 1
	}
	size := max(s.segSize, int64(n)+headerSize)
	f, err := s.fs.Create(segName(s.dir, seq), size)
	if err != nil {
		return err
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return errors.Join(err, f.Close())
	}
	s.segs = append(s.segs, &segment{seq: seq, f: f})
	return nil
}

// Close closes the segments; later calls return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, g := range s.segs {
		errs = append(errs, g.f.Close())
	}
	return errors.Join(errs...)
}
