package proptest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// The records machine drives a store of replicated records
// (engineops.WithRecords) as a replica of a replicated group does: it
// builds rounds of records as a leader, appends them, appends a peer's
// records as a follower, syncs, moves the commit point, truncates the
// uncommitted tail, restarts and cuts the power (crashsim, every choice
// drawn by rapid). The peer, a second store of replicated records on
// memfs, follows the same CommitLog and builds the rounds a follower
// receives. The model is the CommitLog's bytes. Its properties:
//
//	R1 nothing at or past the commit point is ever dispatched or read;
//	R2 after a power cut the CommitLog is the model's up to a record
//	   boundary at or past what was synced (a truncated tail never comes
//	   back, nothing synced is lost);
//	R3 a build takes the queue offsets the model's records give: those of
//	   a truncated tail again, those after the records kept past the commit
//	   point by recovery;
//	R4 once dispatched, every record below the commit point is served,
//	   exactly as the model's records say (queue, queue offset, position),
//	   and as a plain store opened on those records serves them; the peer,
//	   which appended the same bytes, holds the same CommitLog.

// recordsVariant switches one safety step of the replicated records off.
type recordsVariant struct {
	name     string
	property string
	hook     func(*hooks.Engine)
}

func recordsVariants() []recordsVariant {
	return []recordsVariant{
		{"IgnoreCommitPoint", "R1", func(h *hooks.Engine) { h.IgnoreCommitPoint = true }},
		{"RecoveryIgnoresCommitPoint", "R1", func(h *hooks.Engine) { h.RecoveryIgnoresCommitPoint = true }},
		{"NoTruncateRollback", "R3", func(h *hooks.Engine) { h.NoTruncateRollback = true }},
	}
}

type recordsMachine struct {
	rt    *rapid.T
	hook  func(*hooks.Engine)
	stats *recordsStats
	// flush is the store's flush type: under SyncFlush the dispatcher
	// also stops at the synced end.
	flush engine.FlushDiskType

	fs   *crashsim.FS
	s    *engine.Store
	ops  engineops.Ops
	peer engineops.Ops
	// log is the model: the CommitLog's bytes; synced and commit are
	// offsets into it; pending are the builds not yet appended.
	log     []byte
	synced  int64
	commit  int64
	pending []engine.Built
	msgs    int
}

// recordsKeys are the queues the machine writes to: delayed messages
// (level 1) go to the schedule topic's queue 0.
var recordsKeys = []struct {
	topic string
	queue int32
}{{"t0", 0}, {"t0", 1}, {"t1", 0}, {"t1", 1}, {record.ScheduleTopic, 0}}

func (m *recordsMachine) config(commit int64) engine.Config {
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet, FlushDiskType: m.flush})
	if m.hook != nil {
		m.hook(hooks.EngineOf(&cfg))
	}
	return engineops.WithRecords(cfg, commit)
}

func (m *recordsMachine) open(commit int64) {
	s, err := engine.Open(m.fs, m.config(commit))
	if errors.Is(err, engine.ErrUndecidableDamage) {
		// A power cut tore an unsynced page before one that reached the
		// disk: recovery refuses, and the operator's documented choice,
		// truncation (a replica's records past what it synced are no
		// Raft entry yet), must then give every property.
		m.stats.undecidable.Add(1)
		cfg := m.config(commit)
		cfg.OnUndecidableDamage = engine.DamageTruncate
		s, err = engine.Open(m.fs, cfg)
	}
	if err != nil {
		m.rt.Fatalf("open: %v", err)
	}
	m.s, m.ops = s, engineops.Of(s)
}

// recInfo is a record of the model.
type recInfo struct {
	off   int64
	size  int64
	blank bool
	key   string
	qoff  int64
}

// records parses the model's records.
func (m *recordsMachine) records() []recInfo { return m.parse(m.log, 0) }

// parse parses records b at CommitLog offset base. A record that takes no
// queue offset (a prepared transaction half) has no key.
func (m *recordsMachine) parse(b []byte, base int64) []recInfo {
	var out []recInfo
	for p := int64(0); p < int64(len(b)); {
		info, err := record.Check(b[p:], base+p, false)
		if err != nil {
			m.rt.Fatalf("the model's own records do not parse at %d: %v", base+p, err)
		}
		r := recInfo{off: base + p, size: int64(info.Size), blank: info.Blank}
		if !info.Blank && record.TransactionType(info.SysFlag) != record.TransactionPrepared {
			r.key, r.qoff = fmt.Sprintf("%s/%d", info.Topic, info.QueueID), info.QueueOffset
		}
		out = append(out, r)
		p += int64(info.Size)
	}
	return out
}

// boundaries returns the record boundaries of the model in [lo, hi].
func (m *recordsMachine) boundaries(lo, hi int64) []int64 {
	var out []int64
	for _, r := range m.records() {
		if r.off >= lo && r.off <= hi {
			out = append(out, r.off)
		}
	}
	if n := int64(len(m.log)); n >= lo && n <= hi {
		out = append(out, n)
	}
	return out
}

// nextQueueOffsets returns each queue's next queue offset after the
// model's records and the pending builds.
func (m *recordsMachine) nextQueueOffsets() map[string]int64 {
	next := map[string]int64{}
	rs := m.records()
	for _, b := range m.pending {
		rs = append(rs, m.parse(b.Bytes, b.Offset)...)
	}
	for _, r := range rs {
		if r.key != "" {
			next[r.key] = r.qoff + 1
		}
	}
	return next
}

func (m *recordsMachine) buildEnd() int64 {
	end := int64(len(m.log))
	for _, b := range m.pending {
		end += int64(len(b.Bytes))
	}
	return end
}

func (m *recordsMachine) drawMsgs(what string) []*engine.Message {
	n := rapid.IntRange(1, 4).Draw(m.rt, what+" messages")
	msgs := make([]*engine.Message, n)
	for i := range msgs {
		k := recordsKeys[rapid.IntRange(0, 3).Draw(m.rt, "queue")]
		m.msgs++
		msg := &engine.Message{Topic: k.topic, QueueID: k.queue,
			Body: bytes.Repeat([]byte{byte('a' + m.msgs%26)}, rapid.IntRange(1, 700).Draw(m.rt, "body"))}
		// Some are delayed (stored in the schedule topic) or prepared
		// transaction halves (no queue offset, never dispatched).
		switch rapid.IntRange(0, 9).Draw(m.rt, "kind") {
		case 0:
			msg.Properties = map[string]string{record.PropertyDelayTimeLevel: "1"}
		case 1:
			msg.SysFlag = record.TransactionPrepared
		}
		msgs[i] = msg
	}
	return msgs
}

// build builds a round as a leader; the records wait to be appended.
func (m *recordsMachine) build() {
	want := m.nextQueueOffsets()
	msgs := m.drawMsgs("build")
	b, err := m.ops.BuildRecords(msgs)
	if err != nil {
		m.rt.Fatalf("build: %v", err)
	}
	if end := m.buildEnd(); b.Offset != end {
		m.rt.Fatalf("R3: built at %d, the model's records and builds end at %d", b.Offset, end)
	}
	for i, r := range b.Results {
		k := fmt.Sprintf("%s/%d", r.Topic, r.QueueID)
		if msgs[i].SysFlag == record.TransactionPrepared {
			if r.QueueOffset != 0 {
				m.rt.Fatalf("R3: a prepared half built with queue offset %d", r.QueueOffset)
			}
			continue
		}
		if r.QueueOffset != want[k] {
			m.rt.Fatalf("R3: built %s at queue offset %d, the model's next is %d", k, r.QueueOffset, want[k])
		}
		want[k]++
	}
	m.pending = append(m.pending, b)
}

// appendOwn appends the oldest pending build, here and on the peer.
func (m *recordsMachine) appendOwn() {
	if len(m.pending) == 0 {
		return
	}
	b := m.pending[0]
	if err := m.ops.AppendRecords(b.Bytes, b.Offset); err != nil {
		m.rt.Fatalf("append own build at %d: %v", b.Offset, err)
	}
	if err := m.peer.AppendRecords(b.Bytes, b.Offset); err != nil {
		m.rt.Fatalf("peer append at %d: %v", b.Offset, err)
	}
	m.pending = m.pending[1:]
	m.log = append(m.log, b.Bytes...)
}

// appendPeer appends a round the peer built, as a follower: the pending
// builds are dropped, unless the round is byte for byte the oldest of them
// (two BLANK records ending the same file), which the store then takes
// for its own.
func (m *recordsMachine) appendPeer() {
	b, err := m.peer.BuildRecords(m.drawMsgs("peer"))
	if err != nil {
		m.rt.Fatalf("peer build: %v", err)
	}
	if err := m.peer.AppendRecords(b.Bytes, b.Offset); err != nil {
		m.rt.Fatalf("peer append: %v", err)
	}
	if err := m.ops.AppendRecords(b.Bytes, b.Offset); err != nil {
		m.rt.Fatalf("append the peer's round at %d: %v", b.Offset, err)
	}
	if len(m.pending) > 0 && m.pending[0].Offset == b.Offset && bytes.Equal(m.pending[0].Bytes, b.Bytes) {
		m.pending = m.pending[1:]
	} else {
		m.pending = nil
	}
	m.log = append(m.log, b.Bytes...)
	if end := m.ops.RecordsEnd(); end != int64(len(m.log)) {
		m.rt.Fatalf("after appending the peer's %d bytes at %d the commitlog ends at %d", len(b.Bytes), b.Offset, end)
	}
}

func (m *recordsMachine) sync() {
	if err := m.ops.SyncRecords(); err != nil {
		m.rt.Fatalf("sync: %v", err)
	}
	m.synced = int64(len(m.log))
}

// moveCommit moves the commit point to a synced record boundary, as Raft
// commits what a majority, this replica included, stored.
func (m *recordsMachine) moveCommit() {
	bs := m.boundaries(m.commit+1, m.synced)
	if len(bs) == 0 {
		return
	}
	c := rapid.SampledFrom(bs).Draw(m.rt, "commit point")
	if err := m.ops.SetCommitPoint(c); err != nil {
		m.rt.Fatalf("set commit point %d: %v", c, err)
	}
	m.commit = c
	m.stats.commitMoves.Add(1)
}

func (m *recordsMachine) dispatch() {
	if _, err := m.ops.Dispatch(); err != nil {
		m.rt.Fatalf("dispatch: %v", err)
	}
	m.checkServed(true)
}

// truncate drops an uncommitted tail, here and on the peer.
func (m *recordsMachine) truncate() {
	t := rapid.SampledFrom(m.boundaries(m.commit, int64(len(m.log)))).Draw(m.rt, "truncate at")
	if err := m.ops.TruncateRecords(t); err != nil {
		m.rt.Fatalf("truncate at %d (commit point %d): %v", t, m.commit, err)
	}
	if err := m.peer.TruncateRecords(t); err != nil {
		m.rt.Fatalf("peer truncate at %d: %v", t, err)
	}
	if t < int64(len(m.log)) {
		m.stats.tailTruncations.Add(1)
	}
	m.log, m.pending, m.synced = m.log[:t], nil, min(m.synced, t)
}

// truncateCommitted tries to truncate below the commit point.
func (m *recordsMachine) truncateCommitted() {
	bs := m.boundaries(0, m.commit-1)
	if len(bs) == 0 {
		return
	}
	t := rapid.SampledFrom(bs).Draw(m.rt, "committed truncation")
	end := m.ops.RecordsEnd()
	if err := m.ops.TruncateRecords(t); !errors.Is(err, engine.ErrCommitted) {
		m.rt.Fatalf("truncate at %d below the commit point %d: %v, want ErrCommitted", t, m.commit, err)
	}
	if got := m.ops.RecordsEnd(); got != end {
		m.rt.Fatalf("a refused truncation moved the end from %d to %d", end, got)
	}
}

// restart closes the store and opens it again with its commit point.
func (m *recordsMachine) restart() {
	if err := m.s.Close(); err != nil {
		m.rt.Fatalf("close: %v", err)
	}
	m.earlierCommit()
	m.open(m.commit)
	m.pending = nil
	m.checkRecovered()
}

// powerCut cuts the power and reopens with the commit point Raft knows:
// the last one, or an earlier one (a replica that learns the commit index
// again from its leader).
func (m *recordsMachine) powerCut() {
	m.ops.Abandon()
	img := m.fs.Crash(crashsim.RapidChooser{T: m.rt})
	fs, err := crashsim.New(img, crashsim.Options{})
	if err != nil {
		m.rt.Fatalf("crash image: %v", err)
	}
	m.fs = fs
	m.stats.powerCuts.Add(1)
	m.earlierCommit()
	m.open(m.commit)
	m.pending = nil
	m.checkRecovered()
}

// earlierCommit may take the commit point back to an earlier boundary
// before an open: a replica that learns the commit index again from its
// leader, after a start from its last snapshot.
func (m *recordsMachine) earlierCommit() {
	if rapid.Bool().Draw(m.rt, "earlier commit point") {
		m.commit = rapid.SampledFrom(m.boundaries(0, m.commit)).Draw(m.rt, "commit point at open")
	}
}

// flushQueues flushes the ConsumeQueues and the checkpoint, so that a
// recovery after a crash starts its scan past the first file.
func (m *recordsMachine) flushQueues() {
	if err := m.ops.FlushConsumeQueues(0); err != nil {
		m.rt.Fatalf("flush consume queues: %v", err)
	}
}

// checkRecovered checks R2 after an open and makes the model what
// survived.
func (m *recordsMachine) checkRecovered() {
	e := m.ops.RecordsEnd()
	if e < m.synced || e > int64(len(m.log)) || !slices.Contains(m.boundaries(0, int64(len(m.log))), e) {
		m.rt.Fatalf("R2: recovered end %d; synced %d, the model ends at %d", e, m.synced, len(m.log))
	}
	got := make([]byte, e)
	if err := m.ops.ReadRecords(got, 0); err != nil {
		m.rt.Fatalf("read the recovered records: %v", err)
	}
	if !bytes.Equal(got, m.log[:e]) {
		i := 0
		for got[i] == m.log[i] {
			i++
		}
		m.rt.Fatalf("R2: the recovered commitlog differs from the model at %d", i)
	}
	if err := m.peer.TruncateRecords(e); err != nil {
		m.rt.Fatalf("peer truncate at %d: %v", e, err)
	}
	m.log, m.synced = m.log[:e], e
	if e > m.commit {
		m.stats.keptPastCommit.Add(1)
	}
	m.checkServed(false)
	m.dispatch()
	for _, k := range recordsKeys {
		m.stats.servedAtCut.Add(int64(len(m.served(k.topic, k.queue))))
	}
	m.checkPlain()
	peer := make([]byte, m.peer.RecordsEnd())
	if err := m.peer.ReadRecords(peer, 0); err != nil {
		m.rt.Fatalf("read the peer's records: %v", err)
	}
	if !bytes.Equal(peer, m.log) {
		m.rt.Fatalf("R4: the peer's commitlog (%d bytes) differs from this replica's (%d)", len(peer), len(m.log))
	}
}

// checkPlain checks R4 against a plain store (no replicated records)
// opened on the committed records alone: it serves every queue exactly as
// the store of records does.
func (m *recordsMachine) checkPlain() {
	fs := memfs.New(nil)
	if err := fs.MkdirAll("commitlog"); err != nil {
		m.rt.Fatal(err)
	}
	for from := int64(0); from < m.commit; from += 4096 {
		seg, err := fs.Create(fmt.Sprintf("commitlog/%020d", from), 4096)
		if err != nil {
			m.rt.Fatal(err)
		}
		if _, err := seg.WriteAt(m.log[from:min(from+4096, m.commit)], 0); err != nil {
			m.rt.Fatal(err)
		}
		if err := seg.Close(); err != nil {
			m.rt.Fatal(err)
		}
	}
	plain, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet}))
	if err != nil {
		m.rt.Fatalf("open a plain store on the committed records: %v", err)
	}
	defer plain.Close()
	if _, err := engineops.Of(plain).Dispatch(); err != nil {
		m.rt.Fatalf("plain store dispatch: %v", err)
	}
	for _, k := range recordsKeys {
		want, got := servedBy(m.rt, plain, k.topic, k.queue), m.served(k.topic, k.queue)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			m.rt.Fatalf("R4: %s/%d serves %v, a plain store on the committed records %v", k.topic, k.queue, got, want)
		}
	}
}

// checkServed checks R1: every queue serves a prefix of the model's
// committed records, nothing past the commit point; with all, R4: all of
// them.
func (m *recordsMachine) checkServed(all bool) {
	if got := m.s.CommitLog().MaxOffset(); got > m.commit {
		m.rt.Fatalf("R1: the commitlog's max offset %d is past the commit point %d", got, m.commit)
	}
	want := map[string][]recInfo{}
	var firstUncommitted int64 = -1
	for _, r := range m.records() {
		switch {
		case r.blank:
		case r.off+r.size > m.commit:
			if firstUncommitted < 0 {
				firstUncommitted = r.off
			}
		case r.key != "":
			want[r.key] = append(want[r.key], r)
		}
	}
	if firstUncommitted >= 0 {
		if _, err := m.s.LookMessageByOffset(firstUncommitted); !errors.Is(err, engine.ErrNotFound) {
			m.rt.Fatalf("R1: the record at %d past the commit point %d is read: %v", firstUncommitted, m.commit, err)
		}
	}
	for _, k := range recordsKeys {
		key := fmt.Sprintf("%s/%d", k.topic, k.queue)
		served := m.served(k.topic, k.queue)
		w := want[key]
		if n := m.s.MaxOffsetInQueue(k.topic, k.queue); n > int64(len(w)) {
			m.rt.Fatalf("R1: %s holds %d units, the model commits %d records to it (commit point %d)", key, n, len(w), m.commit)
		}
		for i, sv := range served {
			if sv.off+sv.size > m.commit {
				m.rt.Fatalf("R1: %s serves queue offset %d at %d, past the commit point %d", key, sv.qoff, sv.off, m.commit)
			}
			if i >= len(w) || sv.off != w[i].off || sv.qoff != w[i].qoff {
				m.rt.Fatalf("R4: %s serves %d at queue offset %d, the model's record there is %v", key, sv.off, sv.qoff, at(w, i))
			}
		}
		if all && len(served) != len(w) {
			m.rt.Fatalf("R4: %s serves %d messages once dispatched, the model commits %d", key, len(served), len(w))
		}
	}
}

func at(w []recInfo, i int) string {
	if i < len(w) {
		return fmt.Sprintf("at %d, queue offset %d", w[i].off, w[i].qoff)
	}
	return "none"
}

// served returns what GetMessage serves of a queue, from queue offset 0.
func (m *recordsMachine) served(topic string, queue int32) []recInfo {
	return servedBy(m.rt, m.s, topic, queue)
}

// servedBy returns what s serves of a queue, from queue offset 0.
func servedBy(rt *rapid.T, s *engine.Store, topic string, queue int32) []recInfo {
	var out []recInfo
	for off := int64(0); ; {
		res, err := s.GetMessage(topic, queue, off, 1000, nil)
		if err != nil {
			rt.Fatalf("get %s/%d: %v", topic, queue, err)
		}
		if res.Status != engine.Found {
			res.Release()
			return out
		}
		for _, v := range res.Messages {
			out = append(out, recInfo{off: v.CommitLogOffset, size: int64(len(v.Record)), qoff: v.QueueOffset})
		}
		off = res.NextBeginOffset
		res.Release()
	}
}

// recordsStats tallies what the records machine did, for the test's log.
type recordsStats struct {
	cases, powerCuts, tailTruncations, commitMoves, servedAtCut, keptPastCommit, undecidable atomic.Int64
}

func (s *recordsStats) String() string {
	return fmt.Sprintf("%d cases, %d power cuts, %d truncations of a written tail, %d commit-point moves, "+
		"%d messages served at a recovery, %d recoveries keeping records past the commit point, %d undecidable damages truncated",
		s.cases.Load(), s.powerCuts.Load(), s.tailTruncations.Load(), s.commitMoves.Load(), s.servedAtCut.Load(), s.keptPastCommit.Load(),
		s.undecidable.Load())
}

// runRecords runs one case of the records machine.
func runRecords(rt *rapid.T, hook func(*hooks.Engine), stats *recordsStats) {
	stats.cases.Add(1)
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		rt.Fatal(err)
	}
	m := &recordsMachine{rt: rt, hook: hook, fs: fs, stats: stats,
		flush: rapid.SampledFrom([]engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush}).Draw(rt, "flush")}
	m.open(0)
	peer, err := engine.Open(memfs.New(nil), engineops.WithRecords(hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet}), 0))
	if err != nil {
		rt.Fatal(err)
	}
	m.peer = engineops.Of(peer)
	defer func() {
		m.ops.Abandon()
		m.peer.Abandon()
	}()
	actions := map[string]func(){
		"build": m.build, "appendOwn": m.appendOwn, "appendPeer": m.appendPeer, "sync": m.sync,
		"commit": m.moveCommit, "dispatch": m.dispatch, "truncate": m.truncate,
		"truncateCommitted": m.truncateCommitted, "restart": m.restart, "powerCut": m.powerCut,
		"flushQueues": m.flushQueues,
	}
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	slices.Sort(names)
	steps := rapid.IntRange(1, 60).Draw(rt, "steps")
	for range steps {
		actions[rapid.SampledFrom(names).Draw(rt, "action")]()
		m.checkServed(false)
	}
	m.powerCut()
}

// TestRecordsCrashProperty checks R1–R4 over random builds, appends,
// syncs, commit-point moves, truncations, restarts and power cuts.
func TestRecordsCrashProperty(t *testing.T) {
	if !userChecks {
		setFlag(t, "rapid.checks", "2000") // about 3 s; the machine's budget would take 10
	}
	var stats recordsStats
	rapid.Check(t, func(rt *rapid.T) { runRecords(rt, nil, &stats) })
	t.Logf("executed: %v", &stats)
}

// TestRecordsBrokenVariants runs the records machine with one safety step
// off and requires a counterexample of that step's property, from a fixed
// seed without shrinking (random seeds and shrinking with
// -brokenvariants).
func TestRecordsBrokenVariants(t *testing.T) {
	for _, v := range recordsVariants() {
		t.Run(v.name, func(t *testing.T) {
			setFlag(t, "rapid.nofailfile", "true")
			setFlag(t, "rapid.checks", "500")
			if !*brokenVariants {
				setFlag(t, "rapid.seed", fmt.Sprint(ciSeed))
				setFlag(t, "rapid.shrinktime", "1ns")
			}
			rec := &recordingTB{TB: t}
			var stats recordsStats
			rapid.Check(rec, func(rt *rapid.T) { runRecords(rt, v.hook, &stats) })
			if !rec.failed {
				t.Fatalf("variant %s: no counterexample", v.name)
			}
			msg := firstLine(rec.msg)
			if i := strings.Index(msg, v.property+":"); i < 0 {
				t.Fatalf("variant %s: caught by another check, not %s: %s", v.name, v.property, msg)
			}
			t.Logf("variant %s: %s", v.name, msg)
		})
	}
}
