package proptest

import (
	"github.com/rocketstore/rocketstore/internal/engineops"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
)

var queueKeys = []queueKey{{"TopicA", 0}, {"TopicA", 1}, {"TopicB", 0}}

// actions returns the state machine's actions; "" is the check run after
// each one, which also turns a frozen FS (a crash at the k-th write) into
// a power cut.
func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"put":        m.actPut,
		"putEdge":    m.actPutEdge,
		"batch":      m.actBatch,
		"flushAll":   func(*rapid.T) { m.flushCommitLog(0) },
		"flushTick":  func(*rapid.T) { m.flushCommitLog(4) },
		"dispatch":   m.actDispatch,
		"flushCQ":    func(*rapid.T) { m.flushCQ(2) },
		"flushCQAll": func(*rapid.T) { m.flushCQ(0) },
		"get":        m.actGet,
		"redispatch": m.actRedispatch,
		"retention":  m.actRetention,
		"restart":    func(*rapid.T) { m.restart() },
		"kill":       func(*rapid.T) { m.kill() },
		"crash":      func(t *rapid.T) { m.crash(false) },
		"armCrash":   m.actArmCrash,
		"armFault":   m.actArmFault,
		"":           m.afterAction,
	}
}

func (m *machine) afterAction(t *rapid.T) {
	m.stats.actions.Add(1)
	if m.fs.Frozen() {
		m.crash(true)
		return
	}
	m.checkReadOnly()
}

func (m *machine) drawQueue(t *rapid.T) queueKey {
	return rapid.SampledFrom(queueKeys).Draw(t, "queue")
}

func (m *machine) actPut(t *rapid.T) {
	k := m.drawQueue(t)
	n := rapid.SampledFrom([]int{0, 1, 17, 100, 400, 1500}).Draw(t, "bodyLen")
	m.put([]*msg{m.newMsg(k, n)})
}

// actPutEdge puts a record that exactly fills the rest of the current
// CommitLog file (leaving the BLANK record's 8 bytes) or misses it by one
// byte, forcing a roll.
func (m *machine) actPutEdge(t *rapid.T) {
	k := m.drawQueue(t)
	delta := rapid.SampledFrom([]int64{0, 1, -1}).Draw(t, "delta")
	mm := m.newMsg(k, 0)
	n := bodyFor(k, mm.tags, m.roomInFile(), delta)
	if n < 0 {
		t.Skip("no body fills the room") // the action is rejected, not the case
	}
	mm.body = m.newMsg(k, n).body
	m.put([]*msg{mm})
}

func (m *machine) actBatch(t *rapid.T) {
	k := m.drawQueue(t)
	n := rapid.IntRange(2, 4).Draw(t, "batchSize")
	size := rapid.SampledFrom([]int{5, 60, 300}).Draw(t, "batchBodyLen")
	msgs := make([]*msg, n)
	for i := range msgs {
		msgs[i] = m.newMsg(k, size)
	}
	m.put(msgs)
}

func (m *machine) flushCommitLog(leastPages int) {
	err := m.s.FlushCommitLog(leastPages)
	m.engineErr("FlushCommitLog", err)
	// After a failure, later flushes cannot vouch for pages whose sync
	// failed (they may be lost for good), so they acknowledge nothing.
	if err == nil && leastPages == 0 && !m.md.failed {
		m.md.markAllDurable()
	}
}

func (m *machine) actDispatch(*rapid.T) { m.dispatch() }

// dispatch runs one pass and reports whether it completed. A failed pass
// leaves the store waiting for a retry, not read-only.
func (m *machine) dispatch() bool {
	_, err := engineops.Of(m.s).Dispatch()
	m.engineErr("Dispatch", err)
	return err == nil
}

func (m *machine) flushCQ(leastPages int) {
	m.engineErr("FlushConsumeQueues", engineops.Of(m.s).FlushConsumeQueues(leastPages))
}

// actArmCrash installs a power cut right after the k-th write from now.
func (m *machine) actArmCrash(t *rapid.T) {
	if m.injecting() {
		t.Skip("an injector is already installed")
	}
	k := rapid.IntRange(1, 6).Draw(t, "crashAtWrite")
	m.fs.SetInjector(crashsim.CrashWhen(crashsim.Nth(k, crashsim.OnKind(crashsim.OpWrite))))
	m.armed = true
}

// faultKinds are the injected I/O errors: what fails, and how.
var faultKinds = []struct {
	name string
	kind crashsim.OpKind
	err  error
}{
	{"EIO on sync", crashsim.OpSync, crashsim.ErrIO},
	{"EIO on write", crashsim.OpWrite, crashsim.ErrIO},
	{"short write", crashsim.OpWrite, crashsim.ErrShortWrite},
	{"ENOSPC on create", crashsim.OpCreate, crashsim.ErrNoSpace},
	{"EIO on syncdir", crashsim.OpSyncDir, crashsim.ErrIO},
}

// actArmFault makes the k-th operation of one kind from now fail.
func (m *machine) actArmFault(t *rapid.T) {
	if m.injecting() {
		t.Skip("an injector is already installed")
	}
	i := rapid.IntRange(0, len(faultKinds)-1).Draw(t, "fault")
	k := rapid.IntRange(1, 4).Draw(t, "faultAt")
	f := faultKinds[i]
	pick := crashsim.Nth(k, crashsim.OnKind(f.kind))
	m.fs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		if pick(op) {
			m.stats.faults.Add(1)
			return f.err
		}
		return nil
	}))
	m.faultArmed = true
}

// actRedispatch replays the CommitLog into the ConsumeQueues from a random
// record boundary (as a tool may): the dispatchers are idempotent, so the
// queues must come out exactly as they were (P4's replay half).
func (m *machine) actRedispatch(t *rapid.T) {
	if m.md.failed {
		t.Skip("store failed; dispatch is stopped")
	}
	if !m.dispatch() || m.md.failed || len(m.md.log) == 0 {
		return
	}
	first := 0 // the first message retention left
	for first < len(m.md.log) && m.md.log[first].off < m.s.CommitLog().MinOffset() {
		first++
	}
	if first == len(m.md.log) {
		return
	}
	from := m.md.log[rapid.IntRange(first, len(m.md.log)-1).Draw(t, "redispatchFrom")].off
	_, err := m.s.Redispatch(from)
	m.engineErr("Dispatch", err)
	if err == nil && !m.md.failed {
		m.checkQueues()
	}
}

// actRetention deletes the first CommitLog file(s) whatever their age (as
// the clean service does when the disk is full), and the ConsumeQueue
// files below: the removed files' blocks are freed, and with
// crashsim.Options.ReuseFreedBlocks may show up in a later file's
// never-synced pages after a power cut, holding records written for other
// offsets (which the PHYSICALOFFSET check must refuse).
func (m *machine) actRetention(t *rapid.T) {
	if m.md.failed || m.st.noRetention {
		t.Skip("store failed, or no retention in this test")
	}
	// Dispatch first, as the dispatcher running beside a real clean
	// service would have: the engine deletes no file the dispatcher has
	// not passed (engine's TestDeleteExpiredFilesKeepsUndispatchedFiles).
	// The ConsumeQueues are flushed (and the checkpoint written) or
	// left unsynced: the engine syncs them before it deletes CommitLog
	// files (the NoRetentionQueueFlush variant).
	ok := m.dispatch()
	if !ok {
		ok = m.dispatch() // one retry
	}
	if !ok || m.md.failed {
		return // the queues are behind: nothing to check
	}
	if rapid.Bool().Draw(t, "flushQueuesFirst") {
		if m.flushCQ(0); m.md.failed {
			return
		}
	}
	files := rapid.IntRange(1, 2).Draw(t, "retentionFiles")
	size := m.s.CommitLog().FileSize()
	// The last file is never deleted: at most up to its start.
	bound := min(m.s.CommitLog().MinOffset()+int64(files)*size, m.s.CommitLog().MaxOffset()-m.s.CommitLog().MaxOffset()%size)
	// And never past the dispatcher.
	bound = min(bound, engineops.Of(m.s).ReputFromOffset())
	m.md.deletable = max(m.md.deletable, bound)
	_, err := m.s.DeleteExpiredFiles(m.clock.Now(), engine.RetentionPolicy{MaxFilesPerRound: files}, true)
	if err != nil {
		// A failed removal (its directory sync) leaves the store
		// writable: the file may come back after a power cut, which
		// only lowers the CommitLog minimum again. A failed sync of
		// the queues before it turns the store read-only.
		if !m.injecting() {
			t.Fatalf("DeleteExpiredFiles failed without an injected fault: %v", err)
		}
		if m.s.Health().FlushFailed {
			m.md.failed = true
		}
		return
	}
	// What the dispatcher had not reached is still there to dispatch.
	if m.dispatch() && !m.md.failed {
		m.checkQueues()
	}
}
