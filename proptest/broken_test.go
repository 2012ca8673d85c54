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

var brokenVariants = flag.Bool("brokenvariants", false, "run the broken variants with rapid's full budget, random seeds and shrinking (CI runs them with a fixed seed and no shrinking)")

// variant is one safety step switched off, and the property whose check
// must catch it: a variant caught by another property, or by a crash of
// the harness, does not prove the step necessary for the reason given.
type variant struct {
	name     string
	property string
	modify   func(*setup)
}

// unsafeVariant switches one engine safety step off (internal/hooks).
func unsafeVariant(f func(*hooks.Engine)) func(*setup) {
	return func(s *setup) { s.cfgHook = func(c *engine.Config) { f(hooks.EngineOf(c)) } }
}

// allVariants lists one variant per safety step: the directory sync is
// disabled in crashsim, the others by the engine's hooks (internal/hooks). (The
// resynchronisation past damaged records has its own broken variant,
// TestBrokenVariantTruncateAtDamage: the crash model never damages synced
// data.)
func allVariants() []variant {
	return []variant{
		{"NoDirSync", "P1", func(s *setup) { s.fsOpts.IgnoreSyncDir = true }},
		{"NoCRCCheck", "P2", unsafeVariant(func(u *hooks.Engine) { u.NoCRCCheck = true })},
		{"NoTailZeroing", "P2", unsafeVariant(func(u *hooks.Engine) { u.NoTailZeroing = true })},
		{"NoPhysicalOffsetCheck", "P2", unsafeVariant(func(u *hooks.Engine) { u.NoPhysicalOffsetCheck = true })},
		{"NoMaxPhysicOffsetCheck", "P3", unsafeVariant(func(u *hooks.Engine) { u.NoMaxPhysicOffsetCheck = true })},
		{"IgnoreDispatchErrors", "P3", unsafeVariant(func(u *hooks.Engine) { u.IgnoreDispatchErrors = true })},
		{"NoRecoverySync", "P1", unsafeVariant(func(u *hooks.Engine) { u.NoRecoverySync = true })},
		{"NoRedirty", "P1", unsafeVariant(func(u *hooks.Engine) { u.NoRedirty = true })},
	}
}

// TestBrokenVariants runs the crash state machine against the engine with
// one safety step disabled at a time and requires a counterexample that
// breaks the variant's property. In CI (without -brokenvariants) each runs
// from a fixed seed with shrinking off, which keeps it to seconds; with
// -brokenvariants it uses rapid's budget, a random seed and shrinking.
func TestBrokenVariants(t *testing.T) {
	for _, v := range allVariants() {
		t.Run(v.name, func(t *testing.T) { expectCounterexample(t, v) })
	}
}

// setFlag sets a flag for the rest of the test.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set(name, old) })
}

// expectCounterexample runs rapid with a recording TB and fails unless the
// property failed.
func expectCounterexample(t *testing.T, v variant) {
	setFlag(t, "rapid.nofailfile", "true") // a saved case would replay and make this trivial
	if !*brokenVariants {
		explicitSeed := false
		flag.Visit(func(f *flag.Flag) { explicitSeed = explicitSeed || f.Name == "rapid.seed" })
		if !explicitSeed {
			setFlag(t, "rapid.seed", "20261201")
		}
		setFlag(t, "rapid.shrinktime", "1ns") // report the first failure as found
		// The search stops at the first failure: a large budget costs
		// nothing for variants caught early and lets the fixed seed
		// reach the others whatever -rapid.checks says.
		if n, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String()); n < ciChecks {
			setFlag(t, "rapid.checks", strconv.Itoa(ciChecks))
		}
	}
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
	if !strings.Contains(rec.msg, " "+v.property+":") {
		t.Fatalf("variant %s: caught, but not by %s: %s", v.name, v.property, firstLine(rec.msg))
	}
	// The case that first failed (rapid's "failed after N tests" says the
	// same, but not when shrinking could not replay the failure); the
	// stats also count the shrinking runs.
	t.Logf("variant %s: %s counterexample at case %d (rapid: %s; %d cases run with shrinking): %s",
		v.name, v.property, firstFailure.Load(), casesBefore(rec.msg), stats.cases.Load(), firstLine(rec.msg))
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
