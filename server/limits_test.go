package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestInFlightFairShare: when the global bound is reached, a connection
// holding its share is refused while one holding less is admitted.
func TestInFlightFairShare(t *testing.T) {
	l := newLimiter(Limits{MaxInFlight: 4}, clockwork.NewRealClock())
	var heavy []func()
	for i := range 4 {
		rel, by := l.admit(context.Background(), 1)
		if rel == nil {
			t.Fatalf("heavy request %d refused by %s below the bound", i, by)
		}
		heavy = append(heavy, rel)
	}
	if rel, by := l.admit(context.Background(), 1); rel != nil || by != "in_flight" {
		t.Fatalf("heavy connection over the bound admitted (%v)", by)
	}
	light, _ := l.admit(context.Background(), 2)
	if light == nil {
		t.Fatal("a light connection was refused because of a heavy one")
	}
	// Two active connections: the fair share is 2, so the light one gets
	// a second request but not a third.
	light2, _ := l.admit(context.Background(), 2)
	if light2 == nil {
		t.Fatal("light connection refused within its fair share")
	}
	if rel, _ := l.admit(context.Background(), 2); rel != nil {
		t.Fatal("light connection admitted beyond its fair share while the bound is exceeded")
	}
	for _, rel := range heavy {
		rel()
	}
	light()
	light2()
	if l.inFlight != 0 || l.active != 0 {
		t.Fatalf("after release: inFlight %d active %d", l.inFlight, l.active)
	}
	l.forget(1)
	l.forget(2)
	if len(l.conns) != 0 {
		t.Fatal("closed connections kept")
	}
}

// TestRateLimitWaits checks the token bucket's waits on a clock that
// stands still: a burst of 3 at 2 requests a second passes at once, the
// next two wait 0.5 s and 1 s, the one after would wait 1.5 s (over
// maxRateWait) and is refused; another connection has its own bucket, and
// time refills a bucket.
func TestRateLimitWaits(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Unix(1000, 0))
	l := newLimiter(Limits{ConnRequestRate: 2, ConnRequestBurst: 3}, clock)
	for i, want := range []time.Duration{0, 0, 0, 500 * time.Millisecond, time.Second} {
		if wait, ok := l.reserve(1); !ok || wait != want {
			t.Fatalf("request %d: wait %v (admitted %v), want %v", i+1, wait, ok, want)
		}
	}
	if wait, ok := l.reserve(1); ok {
		t.Fatalf("request 6 admitted with a wait of %v, over %v", wait, maxRateWait)
	}
	if wait, ok := l.reserve(2); !ok || wait != 0 {
		t.Fatalf("another connection: wait %v (admitted %v)", wait, ok)
	}
	// 1.5 s later the two borrowed tokens are repaid and one is back.
	clock.Advance(1500 * time.Millisecond)
	if wait, ok := l.reserve(1); !ok || wait != 0 {
		t.Fatalf("after 1.5 s: wait %v (admitted %v), want none", wait, ok)
	}
}

// TestDenialLogThrottled: a client refused in a loop cannot flood the log.
func TestDenialLogThrottled(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Unix(1, 0))
	var buf strings.Builder
	sec := &security{s: &Server{cfg: Config{Clock: clock},
		log: slog.New(slog.NewTextHandler(&buf, nil))}}
	for range 1000 {
		sec.logDenial("acl: request denied")
	}
	if n := strings.Count(buf.String(), "\n"); n != denialLogBurst {
		t.Fatalf("%d lines logged for 1000 denials in an instant, want the burst %d", n, denialLogBurst)
	}
	clock.Advance(time.Second)
	sec.logDenial("acl: request denied")
	if !strings.Contains(buf.String(), "suppressedSinceLastLine=950") {
		t.Fatalf("suppressed count not reported:\n%s", buf.String()[len(buf.String())-200:])
	}
}

// TestRateLimitWaitRunsOnTheClock: a request over the burst waits for its
// token on the limiter's clock: it is admitted once that clock moved the
// wait, not before (on a wall-clock timer it would be admitted after half
// a second of real time, with this clock standing still).
func TestRateLimitWaitRunsOnTheClock(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Unix(1000, 0))
	l := newLimiter(Limits{ConnRequestRate: 2, ConnRequestBurst: 1}, clock)
	release, by := l.admit(context.Background(), 1)
	if release == nil {
		t.Fatalf("the burst refused by %s", by)
	}
	release()
	admitted := make(chan func(), 1)
	go func() {
		rel, _ := l.admit(context.Background(), 1)
		admitted <- rel
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil { // waiting for its token
		t.Fatal(err)
	}
	clock.Advance(499 * time.Millisecond)
	select {
	case <-admitted:
		t.Fatal("admitted before its token arrived")
	default:
	}
	clock.Advance(time.Millisecond)
	select {
	case rel := <-admitted:
		if rel == nil {
			t.Fatal("refused after waiting for its token")
		}
		rel()
	case <-ctx.Done():
		t.Fatal("not admitted once its token arrived")
	}
}
