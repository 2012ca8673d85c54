package proptest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"pgregory.net/rapid"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// setup is what one test case runs on; rapid draws it.
type setup struct {
	fileSize  int64
	cqUnits   int64
	flush     engine.FlushDiskType
	clockStep int64 // ms between puts; large steps make the checkpoint's 3 s margin matter
	fsOpts    crashsim.Options
	cfgHook   func(*engine.Config) // broken variants change the engine config
	// noRetention turns the retention action off.
	noRetention bool
}

// reuseFreedBlocks is the harsher disk of the main test: freed blocks of
// removed files may show up in never-written-back pages of any file after
// a power cut. ConsumeQueue pages were long left out (a stale block of
// units pointing below the CommitLog minimum cannot be checked); recovery
// now rebuilds the queues when a replayed record finds another record's
// unit at its index, and the model adopts the unreadable units left when
// nothing replays (adoptGhosts; TestStaleQueuePageAfterPowerCut).
var reuseFreedBlocks = crashsim.Options{ReuseFreedBlocks: true}

func drawSetup(t *rapid.T) setup {
	return setup{
		fileSize:  rapid.SampledFrom([]int64{4096, 8192, 16384}).Draw(t, "fileSize"),
		cqUnits:   rapid.SampledFrom([]int64{4, 16}).Draw(t, "cqUnits"),
		flush:     rapid.SampledFrom([]engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush}).Draw(t, "flush"),
		clockStep: rapid.SampledFrom([]int64{1, 1000, 4000}).Draw(t, "clockStep"),
		fsOpts:    reuseFreedBlocks,
	}
}

// machine drives one store on a crashsim FS and keeps the model.
type machine struct {
	t     *rapid.T
	st    setup
	stats *counters
	fs    *crashsim.FS
	s     *engine.Store
	clock *clockwork.FakeClock
	md    model
	seq   int
	// armed is set while a crash-at-the-k-th-write injector is installed.
	armed bool
	// faultArmed is set while an I/O error injector is installed.
	faultArmed bool
	// transient is set once a resumable failure (disk full, dispatch
	// failing) was seen: later refusals for the same cause are expected.
	transient bool
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func (m *machine) config() engine.Config {
	cfg := hooks.Manual(engine.Config{
		CommitLogFileSize: m.st.fileSize,
		ConsumeQueueUnits: m.st.cqUnits,
		FlushDiskType:     m.st.flush,
		Logger:            quiet,
		Clock:             m.clock,
	})
	if m.st.cfgHook != nil {
		m.st.cfgHook(&cfg)
	}
	return cfg
}

func newMachine(t *rapid.T, st setup, stats *counters) *machine {
	fs, err := crashsim.New(nil, st.fsOpts)
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{t: t, st: st, stats: stats, fs: fs, clock: clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))}
	m.s = m.mustOpen(fs, "initial open")
	return m
}

// mustOpen opens a store on fs with the injector removed.
func (m *machine) mustOpen(fs *crashsim.FS, why string) *engine.Store {
	fs.SetInjector(nil)
	s, err := engine.Open(fs, m.config())
	if errors.Is(err, engine.ErrUndecidableDamage) {
		// A power cut left unwritten pages before written ones with no
		// zero bytes to show it (stale blocks): recovery refuses, and
		// the operator's documented choice, truncation, must then give
		// every property.
		m.stats.undecidable.Add(1)
		cfg := m.config()
		cfg.OnUndecidableDamage = engine.DamageTruncate
		s, err = engine.Open(fs, cfg)
	}
	if err != nil {
		m.t.Fatalf("%s: open: %v", why, err)
	}
	return s
}

// tick advances the store clock by one put's worth.
func (m *machine) tick() { m.clock.Advance(time.Duration(m.st.clockStep) * time.Millisecond) }

// engineErr records an engine failure: from now on puts must fail.
func (m *machine) engineErr(what string, err error) {
	if err == nil {
		return
	}
	resumable := errors.Is(err, engine.ErrDiskFull) || errors.Is(err, engine.ErrDispatchFailing) || what == "Dispatch"
	if !m.injecting() && !(resumable && m.transient) {
		m.t.Fatalf("%s failed without an injected fault: %v", what, err)
	}
	if resumable {
		// A full disk or a failing dispatcher refuses puts only until a
		// retry succeeds: the store must not turn read-only
		// for good, and nothing is acknowledged meanwhile.
		m.transient = true
		return
	}
	m.md.failed = true
}

// injecting reports whether an injected fault or freeze may have caused an
// error.
func (m *machine) injecting() bool { return m.armed || m.faultArmed }

// checkReadOnly asserts that a failed store refuses puts.
func (m *machine) checkReadOnly() {
	if !m.md.failed {
		return
	}
	_, err := m.s.Put(context.Background(), &engine.Message{Topic: "TopicA", Body: []byte("refused")})
	if err == nil {
		m.t.Fatalf("put accepted after a failed engine call (store must be read-only)")
	}
	if !m.fs.Frozen() && !errors.Is(err, engine.ErrReadOnly) {
		m.t.Fatalf("put after a failure: %v, want ErrReadOnly", err)
	}
}

func (m *machine) newMsg(k queueKey, bodyLen int) *msg {
	m.seq++
	body := make([]byte, bodyLen)
	for i := range body {
		body[i] = byte(m.seq*31 + i)
	}
	tags := []string{"", "tagA", "tagB"}[m.seq%3]
	return &msg{topic: k.topic, qid: k.qid, body: body, tags: tags}
}

func (mm *msg) message() *engine.Message {
	return &engine.Message{Topic: mm.topic, QueueID: mm.qid, Body: mm.body, Properties: mm.props()}
}

// accept adds acknowledged-as-written messages at res to the model.
func (m *machine) accept(res engine.PutResult, msgs []*msg) {
	off := res.WroteOffset
	total := int64(0)
	for i, mm := range msgs {
		mm.off, mm.size = off, recordSize(mm.topic, mm.body, mm.props())
		mm.qoff, mm.ts = res.QueueOffset+int64(i), res.StoreTimestamp
		if want := m.md.nextQoff(queueKey{mm.topic, mm.qid}); mm.qoff != want {
			m.t.Fatalf("put %v got queue offset %d, want %d", mm, mm.qoff, want)
		}
		if mm.off < m.md.end() {
			m.t.Fatalf("put %v overlaps the log end %d", mm, m.md.end())
		}
		m.md.log = append(m.md.log, mm)
		off += mm.size
		total += mm.size
	}
	if total != int64(res.WroteBytes) {
		m.t.Fatalf("put result says %d bytes, the records take %d", res.WroteBytes, total)
	}
}

// put stores msgs (one, or a batch) and updates the model.
func (m *machine) put(msgs []*msg) {
	m.tick()
	var res engine.PutResult
	var err error
	if len(msgs) == 1 {
		res, err = m.s.Put(context.Background(), msgs[0].message())
	} else {
		batch := make([]*engine.Message, len(msgs))
		for i, mm := range msgs {
			batch[i] = mm.message()
		}
		res, err = m.s.PutBatch(context.Background(), batch)
	}
	switch {
	case m.md.failed && err == nil:
		m.t.Fatalf("put accepted by a store that failed before")
	case err == nil:
		m.accept(res, msgs)
		if m.st.flush == engine.SyncFlush {
			m.md.markAllDurable()
		}
	case res.WroteBytes > 0:
		// Written, but its sync failed: it may survive, not required.
		m.accept(res, msgs)
		m.engineErr("sync-flush put", err)
	case errors.Is(err, engine.ErrMessageIllegal):
		m.t.Fatalf("put of a legal message refused: %v", err)
	default:
		m.md.maybes = append(m.md.maybes, msgs...)
		m.engineErr("put", err)
	}
}

// roomInFile returns the bytes a record may take at the log end and still
// leave the BLANK record its 8 bytes.
func (m *machine) roomInFile() int64 {
	pos := m.s.CommitLog().MaxOffset() % m.st.fileSize
	return m.st.fileSize - pos - 8
}

// bodyFor returns a body length whose record fills exactly room+delta
// bytes, or -1 when no body can.
func bodyFor(k queueKey, tags string, room, delta int64) int {
	mm := &msg{topic: k.topic, tags: tags}
	overhead := recordSize(k.topic, nil, mm.props())
	n := room + delta - overhead
	if n < 0 || n > 3000 {
		return -1
	}
	return int(n)
}
