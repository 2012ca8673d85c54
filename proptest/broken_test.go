package proptest

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

var brokenVariants = flag.Bool("brokenvariants", false, "run the broken-variant tests (each must FIND a counterexample)")

// variant is one safety step switched off.
type variant struct {
	name   string
	modify func(*setup)
}

// unsafeVariant switches one engine safety step off (internal/hooks).
func unsafeVariant(f func(*hooks.Engine)) func(*setup) {
	return func(s *setup) { s.cfgHook = func(c *engine.Config) { f(hooks.EngineOf(c)) } }
}

// allVariants lists one variant per safety step: the directory sync is
// disabled in crashsim, the others by the engine's Unsafe hook.
func allVariants() []variant {
	return []variant{
		{"NoDirSync", func(s *setup) { s.fsOpts.IgnoreSyncDir = true }},
		{"NoCRCCheck", unsafeVariant(func(u *hooks.Engine) { u.NoCRCCheck = true })},
		{"NoTailZeroing", unsafeVariant(func(u *hooks.Engine) { u.NoTailZeroing = true })},
		{"NoPhysicalOffsetCheck", unsafeVariant(func(u *hooks.Engine) { u.NoPhysicalOffsetCheck = true })},
		{"NoMaxPhysicOffsetCheck", unsafeVariant(func(u *hooks.Engine) { u.NoMaxPhysicOffsetCheck = true })},
	}
}

// TestBrokenVariants runs the crash state machine against the engine with
// one safety step disabled at a time and requires rapid to find a
// counterexample within the default budget.
func TestBrokenVariants(t *testing.T) {
	if !*brokenVariants {
		t.Skip("run with -brokenvariants")
	}
	for _, v := range allVariants() {
		t.Run(v.name, func(t *testing.T) { expectCounterexample(t, v) })
	}
}

// expectCounterexample runs rapid with a recording TB and fails unless the
// property failed.
func expectCounterexample(t *testing.T, v variant) {
	old := flag.Lookup("rapid.nofailfile").Value.String()
	_ = flag.Set("rapid.nofailfile", "true") // a saved case would replay and make this trivial
	defer flag.Set("rapid.nofailfile", old)
	rec := &recordingTB{TB: t}
	var stats counters
	var firstFailure atomic.Int64 // the case number of the first failure
	rapid.Check(rec, func(rt *rapid.T) {
		defer func() {
			// A failure, or a panic other than rapid's skip (invalidData).
			r := recover()
			if rt.Failed() || (r != nil && fmt.Sprintf("%T", r) != "rapid.invalidData") {
				firstFailure.CompareAndSwap(0, stats.cases.Load())
			}
			if r != nil {
				panic(r)
			}
		}()
		st := drawSetup(rt)
		v.modify(&st)
		runMachine(rt, st, &stats)
	})
	if !rec.failed {
		t.Fatalf("variant %s: no counterexample in %v", v.name, &stats)
	}
	// The case that first failed (rapid's "failed after N tests" says the
	// same, but not when shrinking could not replay the failure); the
	// stats also count the shrinking runs.
	t.Logf("variant %s: counterexample at case %d (rapid: %s; %d cases run with shrinking): %s",
		v.name, firstFailure.Load(), casesBefore(rec.msg), stats.cases.Load(), firstLine(rec.msg))
}

// recordingTB passes rapid's output through but keeps failures from
// failing the test.
type recordingTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recordingTB) Error(args ...any)                 { r.failed = true }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *recordingTB) Fatal(args ...any)                 { r.failed = true }
func (r *recordingTB) Fail()                             { r.failed = true }
func (r *recordingTB) FailNow()                          { r.failed = true }
func (r *recordingTB) Failed() bool                      { return r.failed }
func (r *recordingTB) Log(args ...any)                   {}
func (r *recordingTB) Logf(format string, args ...any)   {}

var failedAfter = regexp.MustCompile(`failed after (\d+) tests`)

func casesBefore(msg string) string {
	if m := failedAfter.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return strconv.Itoa(n + 1)
	}
	return "?"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
