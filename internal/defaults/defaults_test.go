package defaults_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/defaults"
)

func TestSet(t *testing.T) {
	type config struct {
		N      int
		D      time.Duration
		S      string
		Levels []time.Duration
		Logger *slog.Logger
		Now    func() int64
	}
	now := func() int64 { return 42 }
	fill := func(c config) config {
		defaults.Set(&c.N, 7)
		defaults.Set(&c.D, time.Second)
		defaults.Set(&c.S, "x")
		defaults.Set(&c.Levels, []time.Duration{time.Minute})
		defaults.Set(&c.Logger, slog.Default())
		defaults.Set(&c.Now, now)
		return c
	}
	got := fill(config{Levels: []time.Duration{}})
	if got.N != 7 || got.D != time.Second || got.S != "x" || len(got.Levels) != 1 || got.Logger != slog.Default() || got.Now() != 42 {
		t.Fatalf("zero fields not defaulted: %+v", got)
	}
	mine := slog.New(slog.DiscardHandler)
	set := config{N: -1, D: 1, S: "y", Levels: []time.Duration{1, 2}, Logger: mine, Now: func() int64 { return 1 }}
	got = fill(set)
	if got.N != -1 || got.D != 1 || got.S != "y" || len(got.Levels) != 2 || got.Logger != mine || got.Now() != 1 {
		t.Fatalf("set fields overwritten: %+v", got)
	}
	calls := 0
	n := 3
	defaults.Lazy(&n, func() int { calls++; return 9 })
	if n != 3 || calls != 0 {
		t.Fatalf("Lazy computed a default for a set field: %d, %d calls", n, calls)
	}
	n = 0
	defaults.Lazy(&n, func() int { calls++; return 9 })
	if n != 9 || calls != 1 {
		t.Fatalf("Lazy: %d, %d calls", n, calls)
	}
}
