package proptest

import (
	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
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

func (m *machine) actDispatch(*rapid.T) {
	_, err := m.s.Dispatch()
	m.engineErr("Dispatch", err)
}

func (m *machine) flushCQ(leastPages int) {
	m.engineErr("FlushConsumeQueues", m.s.FlushConsumeQueues(leastPages))
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
	m.actDispatch(t)
	if m.md.failed || len(m.md.log) == 0 {
		return
	}
	from := m.md.log[rapid.IntRange(0, len(m.md.log)-1).Draw(t, "redispatchFrom")].off
	_, err := m.s.Redispatch(from)
	m.engineErr("Redispatch", err)
	if !m.md.failed {
		m.checkQueues()
	}
}
