package crashsim

import (
	"math/rand/v2"

	"pgregory.net/rapid"
)

// Chooser makes the choices of a crash. Choose returns a number in [0, n);
// what describes the choice (for logs and rapid's draw labels). Choices
// are asked in a deterministic order, so that one sequence of answers
// replays one crash.
//
// The encoding makes 0 the "least survived" answer, so that rapid shrinks
// towards losing everything unsynced:
//   - a pending directory operation: 0 lost, 1 persisted;
//   - an unsynced page: 0 old, 1 torn, 2 new;
//   - a sector of a torn page: 0 old, 1 new.
type Chooser interface {
	Choose(n int, what string) int
}

// Choice values, as documented on Chooser.
const (
	Lost      = 0
	Persisted = 1

	PageOld  = 0
	PageTorn = 1
	PageNew  = 2
)

// RapidChooser draws every choice from a rapid test, so that failing crash
// patterns shrink and replay.
type RapidChooser struct{ T *rapid.T }

// Choose draws an integer in [0, n).
func (c RapidChooser) Choose(n int, what string) int {
	return rapid.IntRange(0, n-1).Draw(c.T, what)
}

// RandomChooser is a seeded chooser for soak runs: a pending directory
// operation or a page survives with probability PercentNew/100, and a page
// is torn with probability PercentTorn/100.
type RandomChooser struct {
	PercentNew  int
	PercentTorn int
	r           *rand.Rand
}

// NewRandomChooser returns a RandomChooser seeded with seed.
func NewRandomChooser(seed uint64, percentNew, percentTorn int) *RandomChooser {
	return &RandomChooser{PercentNew: percentNew, PercentTorn: percentTorn,
		r: rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))}
}

// Choose returns a biased choice for n of 2 or 3, a uniform one otherwise.
func (c *RandomChooser) Choose(n int, what string) int {
	roll := c.r.IntN(100)
	switch n {
	case 2:
		if roll < c.PercentNew {
			return 1
		}
		return 0
	case 3:
		switch {
		case roll < c.PercentTorn:
			return PageTorn
		case roll < c.PercentTorn+(100-c.PercentTorn)*c.PercentNew/100:
			return PageNew
		}
		return PageOld
	}
	return c.r.IntN(n)
}

// Extreme always answers 0 (Oldest: nothing unsynced survives) or n-1
// (Newest: everything survives, as after a clean kernel shutdown).
type Extreme bool

// The two extreme choosers.
const (
	Oldest Extreme = false
	Newest Extreme = true
)

// Choose returns 0 or n-1.
func (e Extreme) Choose(n int, what string) int {
	if e {
		return n - 1
	}
	return 0
}
