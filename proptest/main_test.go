package proptest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// ciChecks is the rapid budget of the crash state machine when neither
// -rapid.checks nor RAPID_CHECKS is given; soakChecks when ROCKETSTORE_SOAK
// is set. The CI figure keeps the package under three minutes on two cores.
const (
	ciChecks   = 6000
	soakChecks = 200000
)

// userSeed is set when the command line (-rapid.seed) or the environment
// (RAPID_SEED) chose rapid's seed. It is read once, before any test sets
// the flag: flag.Visit also lists flags set by flag.Set, so after the
// first broken variant had set and restored -rapid.seed, every later one
// took it for the user's choice and ran from a random seed.
var userSeed bool

// userChecks is set when the command line or the environment chose
// rapid's budget (or ROCKETSTORE_SOAK asked for the soak budget).
var userChecks bool

// TestMain sizes rapid's default budget for CI; an explicit -rapid.checks
// wins.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		explicit = explicit || f.Name == "rapid.checks"
		userSeed = userSeed || f.Name == "rapid.seed"
	})
	if _, env := os.LookupEnv("RAPID_SEED"); env {
		userSeed = true
	}
	_, env := os.LookupEnv("RAPID_CHECKS")
	userChecks = explicit || env || os.Getenv("ROCKETSTORE_SOAK") != ""
	if !explicit && !env {
		n := ciChecks
		if os.Getenv("ROCKETSTORE_SOAK") != "" {
			n = soakChecks
		}
		if err := flag.Set("rapid.checks", fmt.Sprint(n)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// counters tallies what a test executed, for its closing log line.
type counters struct {
	cases, actions, crashes, crashesAtWrite, crashesInRecovery atomic.Int64
	kills, restarts, faults, recoveries, gets                  atomic.Int64
	undecidable, ghosts                                        atomic.Int64
}

func (c *counters) String() string {
	return fmt.Sprintf("%d cases, %d actions, %d power cuts (%d at the k-th write, %d during recovery), "+
		"%d kills, %d clean restarts, %d injected faults fired, %d recoveries checked, %d getMessage checks, %d undecidable-damage refusals, %d unreadable stale units adopted",
		c.cases.Load(), c.actions.Load(), c.crashes.Load(), c.crashesAtWrite.Load(), c.crashesInRecovery.Load(),
		c.kills.Load(), c.restarts.Load(), c.faults.Load(), c.recoveries.Load(), c.gets.Load(), c.undecidable.Load(), c.ghosts.Load())
}

// checkShare runs prop with share of the rapid budget (at least one case),
// so that cheap regression tests and the costly P6 grid do not multiply
// the package's run time. Tests here do not run in parallel.
func checkShare(t *testing.T, share float64, prop func(*rapid.T)) {
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	n, _ := strconv.Atoi(old)
	if err := flag.Set("rapid.checks", strconv.Itoa(max(1, int(float64(n)*share)))); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("rapid.checks", old)
	rapid.Check(t, prop)
}
