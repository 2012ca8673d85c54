package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/cluster/raftlog"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// ErrDiverged reports a replica whose CommitLog or store disagrees with
// the group's log: it stops applying, and Node.Err returns the cause.
var ErrDiverged = errors.New("cluster: replica diverged from the group")

// applyResult is what applying a put entry returns to the proposer.
type applyResult struct {
	res engine.PutResult
	err error
}

// fsm applies committed entries to the broker's store. Raft calls
// ApplyBatch, Snapshot and Restore from one goroutine.
type fsm struct {
	b          *broker.Broker
	store      *engine.Store
	log        *slog.Logger
	nodeID     string
	brokerName string
	peers      []string // configured, canonical
	// snapshotNoSync is the broken variant of the crash tests: a
	// snapshot does not sync the CommitLog.
	snapshotNoSync bool
	// noStateTerm is the broken variant that applies state entries
	// whatever term they were committed in (stateEntry.Term).
	noStateTerm bool
	// joined is set on a node added after the group started, whose
	// peer list is longer than the group's first one.
	joined bool
	ident  *identityFile

	mu sync.Mutex
	// cursor is the CommitLog offset where the next applied record
	// goes. Invariant: cursor <= store's CommitLog MaxOffset; below it
	// the CommitLog holds exactly the applied entries. Records between
	// cursor and MaxOffset were written by an earlier run and are
	// checked, not written again, when their entries are replayed.
	cursor int64
	group  *groupEntry

	// lastTs is the store timestamp of the last applied record; a new
	// leader's first timestamp is not below it.
	lastTs atomic.Int64
	failed atomic.Pointer[error]
	// installs counts the leader's snapshots installed (Restore).
	installs atomic.Int64
	// damageGate, when set, blocks a put entry until the damage that
	// recovery found is repaired (see Node.holdForDamage).
	damageGate func() error

	// records is set on a store of replicated records (LogStoreRecords):
	// message entries are records entries (records.go).
	records bool
	// reinstall is set while a received snapshot's install is finished
	// at start (Node.recoverCursor), not by Raft.
	reinstall bool
	// reinstallDropsTail is a broken variant (records.go).
	reinstallDropsTail bool
	// dropLogTail deletes the log store's entries whose records end past
	// an offset (raftlog.Store.DeleteRecordsFrom), before a live install
	// changes those records; onInstall is the crash tests' hook there.
	dropLogTail func(off, before int64) error
	onInstall   func()

	// noInstallDeletes is a broken variant (deletes.go).
	noInstallDeletes bool
}

// Err returns why the replica stopped applying, or nil.
func (f *fsm) Err() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *fsm) fail(err error) error {
	if f.failed.CompareAndSwap(nil, &err) {
		f.log.Error("replica stopped applying the group's log", "err", err)
	}
	return f.Err()
}

// Apply is raft.FSM's; ApplyBatch does the work.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in order. Puts are written
// without a sync, on the leader too: a committed entry is already fsynced
// in the Raft logs of a quorum, the leader's included, and after a crash
// every committed entry past the last snapshot is applied again from the
// Raft log, re-putting the records the CommitLog lost (applyPut). The
// CommitLog is synced by the store's flush service (every
// FlushIntervalCommitLog) and at every snapshot, before Raft may drop the
// entries it covers (fsmSnapshot.Persist).
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		if err := f.Err(); err != nil {
			out[i] = &applyResult{err: err}
			continue
		}
		out[i] = f.apply(l)
	}
	return out
}

// apply applies one entry: an *applyResult, or for a multi entry the
// []applyResult of its puts in order.
func (f *fsm) apply(l *raft.Log) any {
	if len(l.Data) == 0 {
		return &applyResult{err: fmt.Errorf("%w: empty entry at index %d", ErrBadEntry, l.Index)}
	}
	switch l.Data[0] {
	case kindPut, kindBatch:
		return f.applyPutEntry(l.Index, l.Data)
	case kindMulti:
		subs, err := decodeMulti(l.Data[1:])
		if err != nil {
			return &applyResult{err: f.fail(fmt.Errorf("%w: entry %d: %w", ErrDiverged, l.Index, err))}
		}
		out := make([]applyResult, len(subs))
		for i, sub := range subs {
			out[i] = *f.applyPutEntry(l.Index, sub)
		}
		return out
	case kindState:
		var s stateEntry
		if err := json.Unmarshal(l.Data[1:], &s); err != nil {
			return &applyResult{err: fmt.Errorf("%w: state entry %d: %v", ErrBadEntry, l.Index, err)}
		}
		f.applyState(&s, l.Term)
		return &applyResult{}
	case kindGroup:
		var g groupEntry
		if err := json.Unmarshal(l.Data[1:], &g); err != nil {
			return &applyResult{err: f.fail(fmt.Errorf("%w: group entry %d: %v", ErrDiverged, l.Index, err))}
		}
		return &applyResult{err: f.applyGroup(&g, !f.joined)}
	case kindDelete:
		return f.applyDelete(l)
	case raftlog.KindRecords:
		return f.applyRecords(l.Index, l.Data)
	}
	// A kind this version does not know (a newer leader's, during a
	// rolling upgrade) may carry messages: skipping it would leave this
	// replica's CommitLog without them while the others have them.
	return &applyResult{err: f.fail(fmt.Errorf("%w: unknown kind %d at index %d (written by a newer version?): "+
		"this replica stops applying rather than skip it", ErrBadEntry, l.Data[0], l.Index))}
}

// applyPutEntry applies a put or batch entry (data starts with its kind),
// whole or as one put of a multi entry at index.
func (f *fsm) applyPutEntry(index uint64, data []byte) *applyResult {
	if err := f.Err(); err != nil {
		return &applyResult{err: err}
	}
	e, err := decodePut(data[1:])
	if err != nil {
		return &applyResult{err: f.fail(fmt.Errorf("%w: entry %d: %w", ErrDiverged, index, err))}
	}
	return f.applyPut(index, data[0] == kindBatch, e)
}

// lockForMessages runs the damage gate, takes f.mu and checks that the
// group's identity is known, as every message entry needs; on a refusal
// it returns the entry's result with f.mu not held.
func (f *fsm) lockForMessages(index uint64) *applyResult {
	if f.damageGate != nil {
		if err := f.damageGate(); err != nil {
			return &applyResult{err: f.fail(err)}
		}
	}
	f.mu.Lock()
	if f.group == nil {
		f.mu.Unlock()
		return &applyResult{err: f.fail(fmt.Errorf("%w: message entry %d before the group's identity", ErrDiverged, index))}
	}
	return nil
}

// applyPut writes the entry's messages, or checks them against the
// records already at the cursor (a replay after restart).
func (f *fsm) applyPut(index uint64, batch bool, e *putEntry) *applyResult {
	if r := f.lockForMessages(index); r != nil {
		return r
	}
	defer f.mu.Unlock()
	if f.cursor < f.store.CommitLog().MaxOffset() {
		if err := f.refused(e); err != nil {
			// Refused when it was first applied too: no record.
			return &applyResult{err: err}
		}
		res, err := f.checkExisting(e)
		if err != nil {
			return &applyResult{err: f.fail(fmt.Errorf("%w: replaying entry %d: %w", ErrDiverged, index, err))}
		}
		f.lastTs.Store(res.StoreTimestamp)
		return &applyResult{res: res}
	}
	var res engine.PutResult
	var err error
	if batch {
		res, err = engineops.Of(f.store).PutBatchAs(context.Background(), e.msgs, e.origin)
	} else {
		res, err = engineops.Of(f.store).PutAs(context.Background(), e.msgs[0], e.origin)
	}
	if err != nil {
		if deterministic(err) {
			// Every replica refuses the same message the same way.
			return &applyResult{err: err}
		}
		return &applyResult{err: f.fail(fmt.Errorf("%w: entry %d: %w", ErrDiverged, index, err))}
	}
	f.cursor = res.WroteOffset + int64(res.WroteBytes)
	f.lastTs.Store(res.StoreTimestamp)
	return &applyResult{res: res}
}

// deterministic reports put errors that depend only on the message and
// the group's configuration, so that every replica returns them.
func deterministic(err error) bool {
	return errors.Is(err, engine.ErrMessageIllegal) || errors.Is(err, engine.ErrPropertiesTooLarge) ||
		errors.Is(err, engine.ErrBatch) || errors.Is(err, engine.ErrMessageTooLarge)
}

// refused returns the error with which every replica refuses e's
// messages whatever its store holds (an illegal topic or property, a body
// over MaxMessageSize), so that replaying a refused put does not compare
// it with the next put's record. A put refused for another reason (a
// batch the store cannot take) is still compared, and stops the replica
// as diverged rather than skipping a record.
func (f *fsm) refused(e *putEntry) error {
	var enc record.Encoder
	for _, m := range e.msgs {
		if _, err := enc.Prepare(m, e.origin.StoreHost, f.store.Config().MaxMessageSize); err != nil && deterministic(err) {
			return err
		}
	}
	return nil
}

// checkExisting compares e's messages with the records at the cursor and
// moves the cursor past them.
func (f *fsm) checkExisting(e *putEntry) (engine.PutResult, error) {
	var res engine.PutResult
	for i, m := range e.msgs {
		ext, err := f.recordAtCursor()
		if err != nil {
			return res, err
		}
		if err := sameMessage(ext, m, e.origin); err != nil {
			return res, fmt.Errorf("record at %d: %w", ext.CommitLogOffset, err)
		}
		if i == 0 {
			res = engine.PutResult{WroteOffset: ext.CommitLogOffset, QueueOffset: ext.QueueOffset,
				StoreTimestamp: ext.StoreTimestamp, StoreHost: ext.StoreHost, Topic: ext.Topic, QueueID: ext.QueueID}
		}
		res.WroteBytes += ext.StoreSize
		res.MsgNum++
		f.cursor = ext.CommitLogOffset + int64(ext.StoreSize)
	}
	return res, nil
}

// recordAtCursor decodes the record at the cursor, moving the cursor past
// a BLANK record to the next file first.
func (f *fsm) recordAtCursor() (*record.MessageExt, error) {
	cl := f.store.CommitLog()
	for range 2 {
		rec, err := readRecord(cl, f.cursor)
		if err != nil {
			return nil, err
		}
		info, err := record.Check(rec, f.cursor, true)
		if err != nil {
			return nil, err
		}
		if info.Blank {
			f.cursor += cl.FileSize() - f.cursor%cl.FileSize()
			continue
		}
		return info.Ext(), nil
	}
	return nil, fmt.Errorf("two BLANK records in a row at %d", f.cursor)
}

// readRecord returns a copy of the whole record (or BLANK record) at off.
func readRecord(cl *engine.CommitLog, off int64) ([]byte, error) {
	var h [8]byte
	if cl.ReadAt(h[:], off) < len(h) {
		return nil, fmt.Errorf("no record at %d (CommitLog ends at %d)", off, cl.MaxOffset())
	}
	size := int64(int32(be32(h[:])))
	// A BLANK record is read whole too: record.Check wants all of it.
	blank := int32(be32(h[4:])) == record.MagicBlank
	if (size < record.FixedOverhead && !(blank && size >= 8)) || size > cl.FileSize() {
		return nil, fmt.Errorf("record at %d: size %d", off, size)
	}
	rec := make([]byte, size)
	if int64(cl.ReadAt(rec, off)) < size {
		return nil, fmt.Errorf("record at %d: %d bytes not all published", off, size)
	}
	return rec, nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// sameMessage reports whether ext is the record of m as o stamped it.
func sameMessage(ext *record.MessageExt, m *engine.Message, o engineops.Origin) error {
	topic, qid := ext.Topic, ext.QueueID
	if topic == record.ScheduleTopic && m.Topic != record.ScheduleTopic {
		topic = ext.Properties[record.PropertyRealTopic]
		q, _ := strconv.Atoi(ext.Properties[record.PropertyRealQueueID])
		qid = int32(q)
	}
	switch {
	case topic != m.Topic || qid != m.QueueID:
		return fmt.Errorf("holds %s/%d, the entry %s/%d", topic, qid, m.Topic, m.QueueID)
	case ext.StoreTimestamp < o.StoreTimestamp || ext.StoreHost != o.StoreHost:
		return fmt.Errorf("stored at %d by %s, the entry at %d by %s", ext.StoreTimestamp, ext.StoreHost, o.StoreTimestamp, o.StoreHost)
	case ext.BornTimestamp != m.BornTimestamp || !bytes.Equal(ext.Body, m.Body):
		return errors.New("holds another message (born time or body differ)")
	}
	return nil
}

// applyState takes the leader's consumer offsets, delay offsets and
// topics.
func (f *fsm) applyState(s *stateEntry, term uint64) {
	if s.From == f.nodeID {
		return // the proposer's own tables are the newer
	}
	if s.Term != 0 && s.Term != term && !f.noStateTerm {
		f.log.Info("dropped a state entry captured in an earlier term", "from", s.From, "captured", s.Term, "committed", term)
		return
	}
	offs := f.b.Offsets()
	for k, queues := range s.ConsumerOffsets {
		topic, group, ok := strings.Cut(k, "@")
		if !ok {
			continue
		}
		for qid, off := range queues {
			if offs.Query(group, topic, qid) != off {
				offs.Commit("", group, topic, qid, off)
			}
		}
	}
	if len(s.DelayOffsets) > 0 {
		f.b.Schedule().SetOffsets(s.DelayOffsets)
	}
	topics := f.b.Topics()
	for name, tc := range s.Topics {
		if cur, ok := topics.Get(name); ok && cur.Equal(tc) {
			continue
		}
		if err := topics.Update(tc); err != nil {
			f.log.Warn("replicated topic not taken", "topic", name, "err", err)
		}
	}
	f.applyGroups(s)
}

// state is the tables a state entry or snapshot carries.
func (f *fsm) state() stateEntry {
	topics, _ := f.b.Topics().All()
	return stateEntry{ConsumerOffsets: f.b.Offsets().Table(), DelayOffsets: f.b.Schedule().Offsets(), Topics: topics,
		Groups: f.groupsState(), DeletedTopics: f.store.DeletedTopics()}
}

// applyGroup checks the group's identity against this replica's store and
// configuration and records it. checkPeers is false for a snapshot (a
// node that joined later has a longer peer list).
func (f *fsm) applyGroup(g *groupEntry, checkPeers bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.group != nil {
		if f.group.GroupID != g.GroupID {
			return f.fail(fmt.Errorf("%w: the store directory belongs to broker group %s, this group is %s (a foreign store directory)",
				ErrDiverged, f.group.GroupID, g.GroupID))
		}
		return nil
	}
	if fs := f.store.CommitLog().FileSize(); fs != g.CommitLogFileSize {
		return f.fail(fmt.Errorf("%w: CommitLog file size %d, the group's is %d (mapedFileSizeCommitLog must be equal on every node)",
			ErrDiverged, fs, g.CommitLogFileSize))
	}
	if g.BrokerName != f.brokerName {
		return f.fail(fmt.Errorf("%w: brokerName %q, the group's is %q", ErrDiverged, f.brokerName, g.BrokerName))
	}
	if checkPeers && !slicesEqual(g.Peers, f.peers) {
		return f.fail(fmt.Errorf("%w: peer list %v, the group's leader has %v (every node needs the same raft.peers)",
			ErrDiverged, f.peers, g.Peers))
	}
	if max := f.store.CommitLog().MaxOffset(); max > f.cursor {
		return f.fail(fmt.Errorf("%w: the store directory holds %d bytes of CommitLog that are not from this group (a foreign store directory)",
			ErrDiverged, max))
	}
	if err := f.ident.save(g); err != nil {
		return f.fail(fmt.Errorf("%w: save the group identity: %w", ErrDiverged, err))
	}
	f.group = g
	return nil
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Snapshot captures the applied position and tables; Persist syncs the
// CommitLog up to (at least) that position, which is what makes the Raft
// log before it safe to drop.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.group == nil {
		return nil, errors.New("cluster: no snapshot before the group's identity is committed")
	}
	st := f.state()
	return &fsmSnapshot{store: f.store, noSync: f.snapshotNoSync, h: snapHeader{Group: *f.group, From: f.cursor, To: f.cursor, LastTs: f.lastTs.Load(), State: st}}, nil
}

// Restore installs a snapshot received from the leader: the CommitLog
// records this replica lacks are re-put, those it has are compared byte
// for byte.
func (f *fsm) Restore(rc io.ReadCloser) (err error) {
	defer func() {
		if cerr := rc.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	h, r, err := readSnapHeader(rc)
	if err != nil {
		return err
	}
	if err := f.applyGroup(&h.Group, false); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.install(h, r); err != nil {
		return f.fail(fmt.Errorf("%w: install snapshot: %w", ErrDiverged, err))
	}
	f.log.Info("installed a snapshot of the leader's CommitLog", "from", h.From, "to", h.To, "hadUpTo", f.cursor)
	f.cursor = h.To
	if h.LastTs > f.lastTs.Load() {
		f.lastTs.Store(h.LastTs)
	}
	f.restoreTables(&h.State)
	f.installs.Add(1)
	return nil
}

type fsmSnapshot struct {
	store  *engine.Store
	noSync bool
	h      snapHeader
}

// Persist syncs the CommitLog: the applied records it covers are then
// durable without the entries Raft drops after the snapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if s.noSync {
		return errors.Join(writeSnapHeader(sink, &s.h), sink.Close())
	}
	if err := s.store.FlushCommitLog(0); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := writeSnapHeader(sink, &s.h); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
