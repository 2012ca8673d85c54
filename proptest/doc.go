// Package proptest holds the property-based crash tests of the engine: rapid
// state machines that drive the real engine (engine.Open on a crashsim FS,
// manual mode, internal/hooks) through puts, flushes, dispatch, clean restarts, process
// kills, power cuts (between operations, at the k-th write, during
// recovery) and injected I/O errors, and check properties P1–P6 of
// docs/design.md against a simple model after every recovery; the
// metamorphic test (P6); the broken-variant tests; and the fuzz targets.
//
// The package has no non-test code besides this comment. Budget: the
// default `go test ./proptest` runs 6,000 state-machine cases (each ends
// with at least one power cut) in under three minutes on two cores. For a
// soak run raise rapid's budget, e.g.
//
//	go test ./proptest -run 'TestCrashStateMachine$' -rapid.checks=200000 -timeout 60m
//	ROCKETSTORE_SOAK=1 go test ./proptest -timeout 60m
//
// The broken-variant test (each safety step switched off in turn, through
// internal/hooks.Engine or crashsim's IgnoreSyncDir) must find, for each, a
// counterexample of the property the step is listed under; a failure of
// another check is counted and the search goes on. CI runs it from a fixed
// seed without shrinking, and every run finds the same cases (the machine
// runs no goroutines and the engine's passes over its queues have a fixed
// order). A random seed and shrinking:
//
//	go test ./proptest -run TestBrokenVariants -brokenvariants -v
//
// Beside the state machine, TestPowerCutUnderConcurrentLoad cuts the power
// under a store running its real goroutines (group commit or async flush,
// dispatch, ConsumeQueue flush, retention in every other case), and
// TestBrokerOffsetsUnderPowerCuts under a broker (consumer offsets and the
// delayed-delivery service persisting consumerOffset.json and
// delayOffset.json); each prints the seed of a failing case, which
// reproduces it up to goroutine timing. ROCKETSTORE_SOAK=1 runs 50 times
// as many cases of each.
//
// A failure prints the seed and the shrunk action list, and rapid writes a
// fail file under testdata/rapid/<Test>/ that later runs replay first.
package proptest
