package cluster

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/rocketstore/rocketstore/cluster/raftlog"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/record"
)

// Records entries (LogStoreRecords). The leader builds the CommitLog
// records of a round itself (engineops.Ops.BuildRecords: queue offsets,
// physical offsets and the store timestamp assigned as a put assigns them)
// and proposes their bytes as one raftlog records entry. Every replica's
// log store writes those bytes at their CommitLog offset, byte-identical
// by construction, and syncs them: the record is the log entry, written
// once. Applying the entry moves the store's commit point past it, which
// makes its records visible (dispatched, served); nothing uncommitted is
// ever read.

// replicateRecords builds the round's records, proposes them as one
// records entry and sets each send's result from the build.
func (n *Node) replicateRecords(round []*proposal) {
	ops := engineops.Of(n.fsm.store)
	n.proposeMu.Lock()
	// No build is pending between rounds (one round is in flight at a
	// time, and a round's entry is stored before it is applied) but
	// those of a round whose entry was lost before reaching the log, on
	// a leader that lost the lead and won it back before another
	// leader's records dropped them: they would offset this round.
	n.dropBuilds(ops, 0)
	start := ops.RecordsEnd()
	var (
		off   int64 = -1
		recs  []byte
		built []*proposal
	)
	fail := func(err error) {
		for _, p := range round {
			if p.err == nil {
				p.err = err
			}
		}
	}
	for _, p := range round {
		if err := n.refusedSend(p); err != nil {
			p.err = err // every replica would refuse it: no record
			continue
		}
		res, b, at, err := buildAll(ops, p.msgs)
		if err != nil {
			n.proposeMu.Unlock()
			fail(err)
			n.dropBuilds(ops, start)
			return
		}
		if off < 0 {
			off = at
		}
		recs = append(recs, b...)
		p.res = res
		built = append(built, p)
	}
	if len(built) == 0 {
		n.proposeMu.Unlock()
		return
	}
	start = off
	fut := n.raft.Apply(raftlog.EncodeRecords(off, recs), n.ccfg.ApplyTimeout)
	n.proposeMu.Unlock()
	if err := n.await(fut); err != nil {
		// An entry that never reached the log leaves its builds pending:
		// they would offset every later build.
		n.dropBuilds(ops, start)
		for _, p := range built {
			p.err, p.res = raftError(err), engine.PutResult{}
		}
		return
	}
	if r, ok := fut.Response().(*applyResult); !ok || r.err != nil {
		err := fmt.Errorf("cluster: unexpected apply response %T for a records entry", fut.Response())
		if ok {
			err = r.err
		}
		for _, p := range built {
			p.err, p.res = err, engine.PutResult{}
		}
	}
}

// dropBuilds discards the builds pending at and past from; a failure
// stops the replica (its next builds would not follow its log).
func (n *Node) dropBuilds(ops engineops.Ops, from int64) {
	if err := ops.DropBuilds(from); err != nil {
		_ = n.fsm.fail(fmt.Errorf("%w: drop the records of a round that was not replicated: %w", ErrDiverged, err))
	}
}

// buildAll builds msgs' records, over as many CommitLog files as they
// need, and returns the send's result, the bytes and their offset.
func buildAll(ops engineops.Ops, msgs []*engine.Message) (engine.PutResult, []byte, int64, error) {
	var (
		res engine.PutResult
		out []byte
		off int64
	)
	for i := 0; len(msgs) > 0; i++ {
		b, err := ops.BuildRecords(msgs)
		if err != nil {
			return res, nil, 0, err
		}
		if i == 0 {
			off = b.Offset
		}
		if len(b.Results) == 0 && i > 0 {
			return res, nil, 0, fmt.Errorf("cluster: a message of %d does not fit in an empty CommitLog file", len(msgs))
		}
		out = append(out, b.Bytes...)
		for _, r := range b.Results {
			if res.MsgNum == 0 {
				res = r
				continue
			}
			res.WroteBytes += r.WroteBytes
			res.MsgNum += r.MsgNum
		}
		msgs = msgs[len(b.Results):]
	}
	return res, out, off, nil
}

// refusedSend returns the error with which a put refuses p's messages
// whatever the store holds (an illegal topic or property, a body over
// MaxMessageSize, a batch a put does not take), so that no record is
// built for it.
func (n *Node) refusedSend(p *proposal) error {
	var enc record.Encoder
	for _, m := range p.msgs {
		if _, err := enc.Prepare(m, n.cfg.StoreHost, n.fsm.store.Config().MaxMessageSize); err != nil {
			return err
		}
	}
	if p.kind != kindBatch {
		return nil
	}
	for i, m := range p.msgs {
		switch {
		case m.Topic != p.msgs[0].Topic || m.QueueID != p.msgs[0].QueueID:
			return fmt.Errorf("%w: message %d is for %s/%d, the batch for %s/%d",
				engine.ErrBatch, i, m.Topic, m.QueueID, p.msgs[0].Topic, p.msgs[0].QueueID)
		case m.HasProperty(record.PropertyDelayTimeLevel):
			return fmt.Errorf("%w: message %d has a delay level; batches cannot be delayed", engine.ErrBatch, i)
		}
		if t := record.TransactionType(m.SysFlag); t == record.TransactionPrepared || t == record.TransactionRollback {
			return fmt.Errorf("%w: message %d is a prepared or rollback transaction message", engine.ErrBatch, i)
		}
	}
	return nil
}

// applyRecords applies a records entry: its records, written by the log
// store, become visible. A records entry replayed after a restart is at
// or below the commit point the store opened with, where moving the
// commit point changes nothing.
func (f *fsm) applyRecords(index uint64, data []byte) *applyResult {
	if r := f.lockForMessages(index); r != nil {
		return r
	}
	defer f.mu.Unlock()
	if len(data) <= raftlog.RecordsHeaderSize {
		return &applyResult{err: f.fail(fmt.Errorf("%w: records entry %d of %d bytes", ErrDiverged, index, len(data)))}
	}
	off := int64(be64(data[1:]))
	end := off + int64(len(data)-raftlog.RecordsHeaderSize)
	if err := engineops.Of(f.store).SetCommitPoint(end); err != nil {
		return &applyResult{err: f.fail(fmt.Errorf("%w: commit records entry %d (%d..%d): %w", ErrDiverged, index, off, end, err))}
	}
	f.cursor = max(f.cursor, end)
	return &applyResult{}
}

func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }

// installRecords brings a store of replicated records to h.To from the
// stream r of the leader's CommitLog bytes [h.From, h.To). Committed
// records are compared byte for byte; the written records past the commit
// point (entries this replica's log store holds but has not applied) are
// kept where they are the leader's and truncated from the first that
// differs; the rest are appended as they are, the leader's bytes. A tail
// past h.To is truncated when Raft installs the snapshot: it empties the
// log after the install, and the entries after the snapshot come at h.To.
// When the install is finished at start instead, the tail is the records
// of the log's entries after the snapshot, and stays. Then the records are synced
// and the commit point moved to h.To. The caller holds f.mu.
func (f *fsm) installRecords(h *snapHeader, r io.Reader) error {
	ops := engineops.Of(f.store)
	if f.onInstall != nil && !f.reinstall {
		f.onInstall()
	}
	// The log's entries past the commit point may be about to lose their
	// records (truncated, or overwritten with the leader's): their frames
	// go first, as a tail deletion does, so that a power cut in the
	// install leaves no frame indexing another entry's records. Raft
	// empties the log after a live install anyway, and none of them was
	// counted: the leader sends a snapshot only to a replica missing
	// entries the snapshot holds, so the entries this replica
	// acknowledged are in it. An install finished at start keeps the
	// entries after the snapshot (records at or past h.To: Raft emptied
	// the log before them), and drops the others.
	if f.dropLogTail != nil {
		before := int64(math.MaxInt64)
		if f.reinstall {
			before = h.To
		}
		if err := f.dropLogTail(engineops.Of(f.store).CommitPoint(), before); err != nil {
			return fmt.Errorf("delete the log's entries past the commit point: %w", err)
		}
	}
	cl := f.store.CommitLog()
	local, written, fileSize := cl.MaxOffset(), ops.RecordsEnd(), cl.FileSize()
	if h.From > local {
		return fmt.Errorf("the leader's CommitLog starts at %d (older files were removed) and this replica's ends at %d: "+
			"it cannot be caught up record by record; give it a copy of a replica's store directory", h.From, local)
	}
	var (
		pend    []byte // records to append at pendOff
		pendOff int64
		head    [8]byte
		rec     []byte
		mine    []byte
	)
	flush := func() error {
		if len(pend) == 0 {
			return nil
		}
		if err := ops.AppendRecords(pend, pendOff); err != nil {
			return fmt.Errorf("append the leader's records at %d: %w", pendOff, err)
		}
		written = pendOff + int64(len(pend))
		pend = pend[:0]
		return nil
	}
	for pos := h.From; pos < h.To; {
		if pos > local && deletionDue(f, h.State.DeletedTopics, local, pos) {
			// The leader deleted a topic here: the records before are
			// committed first, as they were on the leader.
			if err := flush(); err != nil {
				return err
			}
			if err := ops.SetCommitPoint(pos); err != nil {
				return err
			}
		}
		if err := f.deleteTopicsUpTo(h.State.DeletedTopics, local, pos); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return fmt.Errorf("stream at %d: %w", pos, err)
		}
		size := int64(int32(be32(head[:])))
		blank := int32(be32(head[4:])) == record.MagicBlank
		if blank && size != fileSize-pos%fileSize {
			return fmt.Errorf("BLANK record at %d fills %d bytes, the file has %d left", pos, size, fileSize-pos%fileSize)
		}
		if !blank && (size < record.FixedOverhead || pos%fileSize+size > fileSize || pos+size > h.To) {
			return fmt.Errorf("record at %d: size %d", pos, size)
		}
		rec = append(append(rec[:0], head[:]...), make([]byte, size-8)...)
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return fmt.Errorf("stream at %d: %w", pos, err)
		}
		switch {
		case pos < local:
			if !blank {
				mine = append(mine[:0], make([]byte, size)...)
				if int64(cl.ReadAt(mine, pos)) != size || !bytes.Equal(mine, rec) {
					return fmt.Errorf("record at %d differs from the leader's", pos)
				}
			}
		case pos+size <= written && len(pend) == 0:
			mine = append(mine[:0], make([]byte, size)...)
			if err := ops.ReadRecords(mine, pos); err == nil && bytes.Equal(mine, rec) {
				break // this replica's log store wrote the leader's record
			}
			if err := ops.TruncateRecords(pos); err != nil {
				return fmt.Errorf("truncate the records that differ from the leader's at %d: %w", pos, err)
			}
			written = pos
			pend, pendOff = append(pend, rec...), pos
		default:
			if pos < written {
				// A record of this replica's ending past the leader's
				// record boundary: its tail differs.
				if err := ops.TruncateRecords(pos); err != nil {
					return fmt.Errorf("truncate the records that differ from the leader's at %d: %w", pos, err)
				}
				written = pos
			}
			if len(pend) == 0 {
				pendOff = pos
			}
			pend = append(pend, rec...)
			if len(pend) >= 4<<20 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		pos += size
	}
	if err := flush(); err != nil {
		return err
	}
	if written > h.To && (!f.reinstall || f.reinstallDropsTail) {
		if err := ops.TruncateRecords(h.To); err != nil {
			return fmt.Errorf("truncate the records past the snapshot at %d: %w", h.To, err)
		}
	}
	if err := ops.SyncRecords(); err != nil {
		return err
	}
	if err := ops.SetCommitPoint(h.To); err != nil {
		return err
	}
	return f.deleteTopicsUpTo(h.State.DeletedTopics, local, h.To)
}

// deletionDue reports whether a topic deletion of the leader's in [from,
// pos] is not done here yet (deleteTopicsUpTo's condition).
func deletionDue(f *fsm, marks map[string]int64, from, pos int64) bool {
	if f.noInstallDeletes {
		return false
	}
	var mine map[string]int64
	for topic, mark := range marks {
		if mark < from || mark > pos {
			continue
		}
		if mine == nil {
			mine = f.store.DeletedTopics()
		}
		if mine[topic] < mark {
			return true
		}
	}
	return false
}
