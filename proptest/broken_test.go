package proptest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

var brokenVariants = flag.Bool("brokenvariants", false, "run the broken variants with rapid's full budget, random seeds and shrinking (CI runs them with a fixed seed and no shrinking)")

// ciSeed is the seed of every broken variant in CI. The search it drives
// is deterministic: the machine runs no goroutines (engine Manual mode),
// takes its time from the test clock, and the engine passes over its
// ConsumeQueues in a fixed order; so each variant's first failure is the
// same case, with the same message, in every run.
const ciSeed = 20261201

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
		{"NoRetentionQueueFlush", "P3", unsafeVariant(func(u *hooks.Engine) { u.NoRetentionQueueFlush = true })},
	}
}

// TestBrokenVariants runs the crash state machine against the engine with
// one safety step disabled at a time and requires a counterexample that
// breaks the variant's property (see expectCounterexample). In CI (without
// -brokenvariants) the search starts from a fixed seed with shrinking off,
// which keeps it to seconds and makes every run find the same cases; with
// -brokenvariants it starts from a random seed and shrinks what it finds.
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

// expectCounterexample searches case after case (one rapid.Check of one
// case each, from seeds base, base+1, ...) until a case fails with the
// variant's property, and fails the test if none does within the budget.
//
// A case may first fail by another check: a disabled safety step often has
// several consequences (no tail zeroing leaves stale records that a later
// recovery refuses as a corrupt store before P2 sees them as phantoms).
// Such catches are counted and logged, not accepted: the variant passes
// only with a counterexample of the property it is listed under, so each
// step is shown necessary for the reason given.
func expectCounterexample(t *testing.T, v variant) {
	// The search stops at the first counterexample: a large budget costs
	// nothing for variants caught early, whatever -rapid.checks says.
	budget, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	budget = max(budget, ciChecks)
	setFlag(t, "rapid.nofailfile", "true") // a saved case would replay and make this trivial
	setFlag(t, "rapid.checks", "1")        // one case per rapid.Check; this loop is the search
	base := uint64(ciSeed)
	if *brokenVariants {
		base = rand.Uint64() | 1 // rapid treats seed 0 as "random"
	} else {
		setFlag(t, "rapid.shrinktime", "1ns") // report the first failure as found
	}
	if userSeed {
		base, _ = strconv.ParseUint(flag.Lookup("rapid.seed").Value.String(), 10, 64)
	}
	setFlag(t, "rapid.seed", "0") // restored after the test; set per case below
	var stats counters
	others := map[string]int{} // other checks that failed first, by their first word
	firstOther := ""
	for i := range budget {
		seed := base + uint64(i)
		if err := flag.Set("rapid.seed", strconv.FormatUint(seed, 10)); err != nil {
			t.Fatal(err)
		}
		rec := &recordingTB{TB: t}
		rapid.Check(rec, func(rt *rapid.T) {
			st := drawSetup(rt)
			v.modify(&st)
			runMachine(rt, st, &stats)
		})
		if !rec.failed {
			continue
		}
		if what := failedCheck(rec.msg); what != v.property {
			others[what]++
			if firstOther == "" {
				firstOther = fmt.Sprintf("seed %d: %s", seed, firstLine(rec.msg))
			}
			continue
		}
		t.Logf("variant %s: %s counterexample at case %d (-rapid.seed=%d)%s: %s",
			v.name, v.property, i+1, seed, otherCatches(others, firstOther), firstLine(rec.msg))
		return
	}
	t.Fatalf("variant %s: no %s counterexample in %d cases from seed %d (%v)%s",
		v.name, v.property, budget, base, &stats, otherCatches(others, firstOther))
}

// failedCheck returns the property a failure message names ("P1" for
// "[rapid] failed after 0 tests: P1: ..."), or the message's first word
// after rapid's prefix when it names none.
func failedCheck(msg string) string {
	msg = firstLine(msg)
	if i := strings.Index(msg, "tests: "); i >= 0 {
		msg = msg[i+len("tests: "):]
	}
	if m := propertyName.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if i := strings.IndexAny(msg, " :"); i > 0 {
		return msg[:i]
	}
	return msg
}

var propertyName = regexp.MustCompile(`^(P\d+):`)

// otherCatches describes the cases that failed by other checks first.
func otherCatches(others map[string]int, first string) string {
	if len(others) == 0 {
		return ""
	}
	n := 0
	for _, c := range others {
		n += c
	}
	return fmt.Sprintf("; %d earlier cases failed by other checks %v, first %s", n, others, first)
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

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
