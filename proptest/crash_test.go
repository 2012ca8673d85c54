package proptest

import (
	"testing"

	"pgregory.net/rapid"
)

// TestCrashStateMachine is the main property test: random puts, flushes,
// dispatch, reads, clean restarts, kills, power cuts (between operations,
// at the k-th write, during recovery) and injected I/O errors against the
// real engine on crashsim, with P1–P5 checked after every recovery.
func TestCrashStateMachine(t *testing.T) {
	var stats counters
	rapid.Check(t, func(rt *rapid.T) {
		runMachine(rt, drawSetup(rt), &stats)
	})
	t.Logf("executed: %v", &stats)
}

// runMachine runs one case and ends it with a power cut, so that every
// case checks at least one recovery.
func runMachine(rt *rapid.T, st setup, stats *counters) {
	stats.cases.Add(1)
	m := newMachine(rt, st, stats)
	rt.Repeat(m.actions())
	if m.fs.Frozen() {
		m.crash(true)
		return
	}
	m.crash(false)
}
