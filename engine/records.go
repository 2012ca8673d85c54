package engine

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/internal/engineops/link"
	"github.com/rocketstore/rocketstore/record"
)

// A store of replicated records (opened with engineops.WithRecords) keeps
// a Raft log's payload in its CommitLog: a replicated group's leader
// builds the CommitLog records of a round of messages without writing
// them (buildRecords), proposes their bytes, and every replica appends
// those bytes at their offset (appendRecords), so that each message
// reaches a replica's disk once and the replicas' CommitLogs are
// byte-identical. Records so appended are not committed: the dispatcher
// (ConsumeQueues, the dispatchers given to Open) and every reader stop at
// the commit point, which the caller moves past them once Raft commits
// them (setCommitPoint). The uncommitted tail can be truncated
// (truncateRecords), handing its queue offsets out again as if its
// records had never been written.
//
// The commit point is not stored by the engine: the caller gives it at
// open (the Raft side knows what it committed), recovery dispatches
// nothing past it, and whole records past it stay in the CommitLog,
// invisible until it moves past them.

func init() {
	link.Records = func(cfg any, commit int64) {
		c := cfg.(*Config)
		c.records, c.commitPoint = true, commit
	}
}

// commitRecords is the replicated-records state of a CommitLog.
type commitRecords struct {
	// on is set at open for a store of replicated records.
	on bool
	// ignore, recoveryIgnore and noRollback are the broken variants'
	// switches (hooks.Engine.IgnoreCommitPoint, RecoveryIgnoresCommitPoint,
	// NoTruncateRollback).
	ignore, recoveryIgnore, noRollback bool
	// commit is the commit point: nothing at or past it is dispatched
	// or read.
	commit atomic.Int64
	// buildEnd is the offset after the last record built or written;
	// pending are the batches built but not yet appended, in order from
	// the written end. Both are guarded by CommitLog.mu.
	buildEnd int64
	pending  []builtRecords
}

// builtRecords is a batch built and not yet appended: its offset, its
// bytes and the queue offset it gave first to each queue, to which the
// queue's next offset goes back if the batch is discarded.
type builtRecords struct {
	off   int64
	b     []byte
	first map[topicQueueKey]int64
}

// Built is a batch of CommitLog records built at the CommitLog's end and
// not written (engineops.Ops.BuildRecords).
type Built struct {
	// Offset is the CommitLog offset of the first record.
	Offset int64
	// Bytes are the records, byte for byte as the CommitLog stores them;
	// when a message did not fit in the current file they end with a
	// BLANK record filling the rest of it (its padding included).
	Bytes []byte
	// Results describe the messages built, in order: a prefix of those
	// given (the rest did not fit before the file's end).
	Results []PutResult
}

// limit returns end, or the commit point when it is below end in a store
// of replicated records: the end of what may be read.
func (c *CommitLog) limit(end int64) int64 {
	if c.rec.on {
		return min(end, c.rec.commit.Load())
	}
	return end
}

// committed reports whether the record at off is below the commit point
// (always outside a store of replicated records).
func (c *CommitLog) committed(off int64) bool { return c.limit(off+1) > off }

// dispatchLimit is limit for the dispatcher: the end of what may be
// dispatched.
func (c *CommitLog) dispatchLimit(end int64) int64 {
	if c.rec.ignore {
		return end
	}
	return c.limit(end)
}

// recoveryLimit is dispatchLimit for recovery: the end of what recovery
// dispatches and of the queue units it keeps.
func (c *CommitLog) recoveryLimit(end int64) int64 {
	if c.rec.recoveryIgnore {
		return end
	}
	return c.dispatchLimit(end)
}

// openForRecords reports why the store takes no records operation now:
// it is closed, or it was not opened for replicated records. The caller
// holds the lifecycle's read lock.
func (s *Store) openForRecords() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.recordsMode()
}

// recordsMode reports an error unless the store holds replicated records.
func (s *Store) recordsMode() error {
	if !s.commitLog.rec.on {
		return fmt.Errorf("%w: the store was not opened for replicated records", ErrRecords)
	}
	return nil
}

// buildRecords builds the records of msgs at the end of what is written
// and built, assigning queue offsets, physical offsets and the store
// timestamp as a put does, without writing them. It stops at the first
// message that does not fit in the current file, ending the batch with a
// BLANK record: the caller builds the rest in the next batch.
func (s *Store) buildRecords(msgs []*Message) (Built, error) {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if err := s.writable(); err != nil {
		return Built{}, err
	}
	if err := s.recordsMode(); err != nil {
		return Built{}, err
	}
	return s.commitLog.build(msgs)
}

func (c *CommitLog) build(msgs []*record.Message) (Built, error) {
	if len(msgs) == 0 {
		return Built{}, fmt.Errorf("%w: no messages", ErrBatch)
	}
	ms := make([]*record.Message, len(msgs))
	for i, m := range msgs {
		var err error
		if ms[i], err = redirectDelayed(m, len(c.cfg.DelayLevels)); err != nil {
			return Built{}, err
		}
	}
	host := c.storeHost
	c.mu.Lock()
	defer c.mu.Unlock()
	fileSize := c.q.fileSize
	off := c.rec.buildEnd
	room := fileSize - off%fileSize
	n, total := 0, 0
	for _, m := range ms {
		p, err := c.enc.Prepare(m, host, c.cfg.MaxMessageSize)
		if err != nil {
			return Built{}, err
		}
		if err := c.checkFits(p.Size); err != nil {
			return Built{}, err
		}
		if int64(total+p.Size)+record.BlankLength > room {
			break
		}
		total += p.Size
		n++
	}
	out := make([]byte, 0, total)
	if n < len(ms) {
		out = make([]byte, 0, room)
	}
	ts := c.storeTime(nil)
	first := make(map[topicQueueKey]int64)
	res := make([]PutResult, 0, n)
	for _, m := range ms[:n] {
		p, _ := c.enc.Prepare(m, host, c.cfg.MaxMessageSize)
		key := topicQueueKey{m.Topic, m.QueueID}
		slot := c.queueOffset(key, m.SysFlag)
		var qoff int64
		if slot != nil {
			qoff = *slot
			if _, ok := first[key]; !ok {
				first[key] = qoff
			}
			*slot = qoff + 1
		}
		at := off + int64(len(out))
		head, body, tail := c.enc.Encode(p, record.Stamp{QueueOffset: qoff, PhysicalOffset: at, StoreTimestamp: ts, StoreHost: host})
		out = append(append(append(out, head...), body...), tail...)
		res = append(res, PutResult{WroteOffset: at, WroteBytes: int32(p.Size), QueueOffset: qoff, MsgNum: 1,
			StoreTimestamp: ts, StoreHost: host, Topic: m.Topic, QueueID: m.QueueID})
	}
	if n < len(ms) {
		blank := room - int64(len(out))
		out = append(out, record.PutBlank(c.blank[:], int32(blank))...)
		out = out[:room] // the padding: zeros (out's capacity is fresh)
	}
	c.rec.buildEnd = off + int64(len(out))
	c.rec.pending = append(c.rec.pending, builtRecords{off: off, b: out, first: first})
	return Built{Offset: off, Bytes: out, Results: res}, nil
}

// dropBuilds discards the pending builds from the i-th on, giving their
// queue offsets back (latest first, so that each queue ends at the first
// offset the discarded builds gave it). The caller holds mu.
func (c *CommitLog) dropBuilds(i int) {
	for j := len(c.rec.pending) - 1; j >= i; j-- {
		if !c.rec.noRollback {
			for k, v := range c.rec.pending[j].first {
				*c.queueSlot(k) = v
			}
		}
		c.rec.pending[j] = builtRecords{}
	}
	c.rec.pending = c.rec.pending[:i]
	c.rec.buildEnd = c.q.MaxOffset()
	if i > 0 {
		last := c.rec.pending[i-1]
		c.rec.buildEnd = last.off + int64(len(last.b))
	}
}

// appendRecords writes b, whole CommitLog records for offset off, at the
// CommitLog's written end, which off must be. The records are checked
// (CRC included) before anything is written; they are durable after a
// sync and visible once the commit point passes them. Bytes that are not
// the oldest pending build (a follower's copy, or another leader's
// records) discard every pending build and take their queue offsets from
// the records.
func (s *Store) appendRecords(b []byte, off int64) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.recordsMode(); err != nil {
		return err
	}
	c := s.commitLog
	c.mu.Lock()
	defer c.mu.Unlock()
	if end := c.q.MaxOffset(); off != end {
		return fmt.Errorf("%w: append at %d, the commitlog ends at %d", ErrRecords, off, end)
	}
	type next struct {
		key  topicQueueKey
		qoff int64
	}
	var nexts []next
	lastTs := int64(0)
	fileSize := c.q.fileSize
	for i := 0; i < len(b); {
		at := off + int64(i)
		req, size, blank, err := s.parser.Parse(b[i:], at, true)
		if err != nil {
			return fmt.Errorf("%w: at %d: %w", ErrRecords, at, err)
		}
		if blank {
			if (at+int64(size))%fileSize != 0 {
				return fmt.Errorf("%w: BLANK record of %d bytes at %d does not end its file", ErrRecords, size, at)
			}
		} else {
			if at%fileSize+int64(size)+record.BlankLength > fileSize {
				return fmt.Errorf("%w: record of %d bytes at %d leaves no room for its file's BLANK record", ErrRecords, size, at)
			}
			if req.Dispatchable() {
				nexts = append(nexts, next{topicQueueKey{string(req.Topic), req.QueueID}, req.ConsumeQueueOffset + 1})
			}
			lastTs = req.StoreTimestamp
		}
		i += int(size)
	}
	for i := 0; i < len(b); {
		at := off + int64(i)
		mf, err := c.q.getLastMappedFile(at, true)
		if err != nil {
			s.fail(err)
			return err
		}
		pos := mf.wrote.Load()
		if mf.fileFromOffset+pos != at {
			err := fmt.Errorf("%w: file %s ends at %d, not %d", ErrRecords, mf.name, mf.fileFromOffset+pos, at)
			s.fail(err)
			return err
		}
		n := min(int64(len(b)-i), fileSize-pos)
		end, err := mf.appendAt(pos, b[i:i+int(n)])
		if err != nil {
			s.fail(err)
			return err
		}
		mf.publish(end)
		if lastTs > 0 {
			mf.setStoreTimestamp(lastTs)
		}
		c.prefaultAhead(mf, end) // as a put moves the write-prefaulted window
		i += int(n)
	}
	if lastTs > c.lastStoreTs {
		c.lastStoreTs = lastTs
	}
	if p := c.rec.pending; len(p) > 0 && p[0].off == off && bytes.Equal(p[0].b, b) {
		// The leader's own build: its queue offsets are taken already.
		p[0] = builtRecords{}
		c.rec.pending = p[1:]
		return nil
	}
	c.dropBuilds(0)
	for _, n := range nexts {
		*c.queueSlot(n.key) = n.qoff
	}
	c.rec.buildEnd = off + int64(len(b))
	return nil
}

// readRecords fills b with the written CommitLog bytes at off, committed
// or not (Raft reads its own log to replicate it). Bytes below the
// CommitLog's minimum (retention removed them) give ErrNotFound, bytes
// past the written end ErrRecords.
func (s *Store) readRecords(b []byte, off int64) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	c := s.commitLog
	for len(b) > 0 {
		if off < c.q.MinOffset() {
			return fmt.Errorf("%w: commitlog offset %d is below the first kept, %d", ErrNotFound, off, c.q.MinOffset())
		}
		x, mf := c.data(off)
		if mf == nil {
			return fmt.Errorf("%w: read at %d past the commitlog's end %d", ErrRecords, off, c.q.MaxOffset())
		}
		n := copy(b, x)
		mf.release()
		if n == 0 {
			return fmt.Errorf("%w: read at %d past the commitlog's end %d", ErrRecords, off, c.q.MaxOffset())
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// recordsEnd returns the CommitLog's written end.
func (s *Store) recordsEnd() int64 { return s.commitLog.q.MaxOffset() }

// syncRecords syncs every written CommitLog byte. Under SyncFlush the
// dispatcher also stops at the synced end, so the sync wakes it
// (FlushCommitLog), for the committed records it covered.
func (s *Store) syncRecords() error { return s.FlushCommitLog(0) }

// commitPoint returns the commit point.
func (s *Store) commitPoint() int64 { return s.commitLog.rec.commit.Load() }

// setCommitPoint moves the commit point to off, a record boundary at or
// below the written end, and wakes the dispatcher. A commit point at or
// below the current one changes nothing (Raft applies entries again after
// a restart).
func (s *Store) setCommitPoint(off int64) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if err := s.openForRecords(); err != nil {
		return err
	}
	c := s.commitLog
	c.mu.Lock()
	if off <= c.rec.commit.Load() {
		c.mu.Unlock()
		return nil
	}
	if err := c.checkBoundary(s.parser, off); err != nil {
		c.mu.Unlock()
		return err
	}
	c.rec.commit.Store(off)
	c.mu.Unlock()
	if !s.cfg.hooks.Manual {
		s.reput.Wake()
	}
	return nil
}

// checkBoundary reports an error unless off is the written end or the
// start of a written record. The caller holds mu.
func (c *CommitLog) checkBoundary(p *dispatch.Parser, off int64) error {
	end := c.q.MaxOffset()
	if off == end {
		return nil
	}
	if off > end {
		return fmt.Errorf("%w: offset %d is past the commitlog's written end %d", ErrRecords, off, end)
	}
	b, mf := c.data(off)
	if mf == nil {
		return fmt.Errorf("%w: offset %d is not held", ErrRecords, off)
	}
	defer mf.release()
	if _, _, _, err := p.Parse(b, off, false); err != nil {
		return fmt.Errorf("%w: offset %d is not a record boundary: %w", ErrRecords, off, err)
	}
	return nil
}

// truncateRecords drops the written and built records at and past end,
// durably (the tail is zeroed and synced, later files removed), and hands
// their queue offsets out again. end must not be below the commit point
// (ErrCommitted) and must be a record boundary.
func (s *Store) truncateRecords(end int64) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if err := s.openForRecords(); err != nil {
		return err
	}
	c := s.commitLog
	c.mu.Lock()
	defer c.mu.Unlock()
	if commit := c.rec.commit.Load(); end < commit {
		return fmt.Errorf("%w: truncation at %d would drop records below the commit point %d", ErrCommitted, end, commit)
	}
	written := c.q.MaxOffset()
	if end >= written {
		i := c.pendingFrom(end)
		if end > written && !(i < len(c.rec.pending) && c.rec.pending[i].off == end) && end != c.rec.buildEnd {
			return fmt.Errorf("%w: truncation at %d is not a boundary of the built records", ErrRecords, end)
		}
		c.dropBuilds(i)
		return nil
	}
	first := make(map[topicQueueKey]int64)
	for p := end; p < written; {
		b, mf := c.data(p)
		if mf == nil {
			return fmt.Errorf("%w: offset %d is not held", ErrRecords, p)
		}
		req, size, blank, err := s.parser.Parse(b, p, false)
		if err == nil && !blank && req.Dispatchable() {
			key := topicQueueKey{string(req.Topic), req.QueueID}
			if _, ok := first[key]; !ok {
				first[key] = req.ConsumeQueueOffset
			}
		}
		mf.release()
		if err != nil {
			return fmt.Errorf("%w: truncation at %d: no record at %d: %w", ErrRecords, end, p, err)
		}
		p += int64(size)
	}
	c.dropBuilds(0)
	if !c.rec.noRollback {
		for k, v := range first {
			*c.queueSlot(k) = v
		}
	}
	q := c.q
	q.flushMu.Lock()
	err := q.truncateDirtyFiles(end)
	q.flushMu.Unlock()
	if err != nil {
		s.fail(err)
		return err
	}
	c.rec.buildEnd = end
	return nil
}

// pendingFrom returns the index of the first pending build at or past
// off (len(pending) when there is none). The caller holds mu.
func (c *CommitLog) pendingFrom(off int64) int {
	i := 0
	for i < len(c.rec.pending) && c.rec.pending[i].off < off {
		i++
	}
	return i
}

// dropBuildsFrom discards the pending builds at and past from, giving
// their queue offsets back; it never touches written records, so a caller
// that lost the race with an append (which drops every pending build
// anyway) drops nothing.
func (s *Store) dropBuildsFrom(from int64) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if err := s.openForRecords(); err != nil {
		return err
	}
	c := s.commitLog
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.pendingFrom(from)
	if i < len(c.rec.pending) {
		c.dropBuilds(i)
	}
	return nil
}

// recoverRecords ends recovery of a store of replicated records: the
// commit point given at open is kept within the recovered CommitLog, and
// the queue offsets taken by the uncommitted records past it, which
// recovery kept but did not dispatch, are taken again.
func (s *Store) recoverRecords(t map[topicQueueKey]int64) {
	c := s.commitLog
	end := c.q.MaxOffset()
	s.takeQueueOffsets(t, c.recoveryLimit(end), end)
	c.rec.buildEnd = end
}

// takeQueueOffsets sets in t each queue's next offset after the records in
// [from, end), up to the first it cannot parse.
func (s *Store) takeQueueOffsets(t map[topicQueueKey]int64, from, end int64) {
	c := s.commitLog
	for p := from; p < end; {
		b, mf := c.data(p)
		if mf == nil {
			break
		}
		req, size, blank, err := s.parser.Parse(b, p, false)
		if err == nil && !blank && req.Dispatchable() {
			t[topicQueueKey{string(req.Topic), req.QueueID}] = req.ConsumeQueueOffset + 1
		}
		mf.release()
		if err != nil {
			break
		}
		p += int64(size)
	}
}

// clampCommitPoint keeps the commit point given at open between the
// CommitLog's minimum and its recovered end.
func (s *Store) clampCommitPoint(end int64) {
	c := s.commitLog
	if !c.rec.on {
		return
	}
	c.rec.commit.Store(max(min(c.rec.commit.Load(), end), c.q.MinOffset()))
}

// belowCommit cuts reqs (and same, aligned with it) at the first record
// at or past the commit point: recovery of a store of replicated records
// dispatches nothing past it.
func (c *CommitLog) belowCommit(reqs []dispatchRequest, same []bool) ([]dispatchRequest, []bool) {
	if !c.rec.on || c.rec.ignore || c.rec.recoveryIgnore {
		return reqs, same
	}
	commit := c.rec.commit.Load()
	n := len(reqs)
	for n > 0 && reqs[n-1].CommitLogOffset >= commit {
		n--
	}
	if len(same) > n {
		same = same[:n]
	}
	return reqs[:n], same
}
