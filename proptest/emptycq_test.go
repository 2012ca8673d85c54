package proptest

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/internal/hooks"
)

// p4EmptyQueueFileCase is the kept TestCrashStateMachine case (seed
// 13514463334878019164) in which a power cut hits recovery at its 12th
// mutating operation: the zeroing write of the last ConsumeQueue file of
// TopicB/0, which the recovery cuts at its start and was about to remove.
// The redone recovery found that file all zeros, nothing to cut, and kept
// it, where one recovery removes it (P4; the queues' offsets were the same).
const p4EmptyQueueFileCase = "testdata/rapid/TestCrashStateMachine/TestCrashStateMachine-20261202010505-p4.fail"

// TestBrokenVariantKeepEmptyLastQueueFile shows that recovery after a crash
// must drop a last ConsumeQueue file that holds no unit: with the step off
// (hooks.Engine.KeepEmptyLastQueueFile), the kept case fails P4. (The same
// case passes with the step on: TestCrashStateMachine replays it.) The
// random search of TestBrokenVariants rarely reaches this state, so the
// variant replays the case that found it.
func TestBrokenVariantKeepEmptyLastQueueFile(t *testing.T) {
	setFlag(t, "rapid.failfile", p4EmptyQueueFileCase)
	setFlag(t, "rapid.nofailfile", "true")
	setFlag(t, "rapid.checks", "1")
	setFlag(t, "rapid.shrinktime", "1ns")
	var stats counters
	rec := &recordingTB{TB: t}
	rapid.Check(rec, func(rt *rapid.T) {
		st := drawSetup(rt)
		unsafeVariant(func(u *hooks.Engine) { u.KeepEmptyLastQueueFile = true })(&st)
		runMachine(rt, st, &stats)
	})
	if !rec.failed {
		t.Fatalf("variant KeepEmptyLastQueueFile: the kept case %s passed (%v)", p4EmptyQueueFileCase, &stats)
	}
	if what := failedCheck(rec.msg); what != "P4" {
		t.Fatalf("variant KeepEmptyLastQueueFile: the kept case failed %s, want P4: %s", what, firstLine(rec.msg))
	}
	t.Logf("variant KeepEmptyLastQueueFile: P4 counterexample: %s", firstLine(rec.msg))
}
