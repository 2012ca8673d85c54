package proptest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// newQueueCrashCase puts messages to the new queue T/0 (several
// ConsumeQueue files: a new directory, then new files in it) while the
// CommitLog is in its first file, then to U/0 for two more CommitLog files,
// dispatches, and flushes the CommitLog and the ConsumeQueues with the
// checkpoint: T/0's units are synced and the checkpoint says so. The power
// then goes, and the crash keeps no pending directory operation and no
// unsynced page. Recovery starts its scan in the last CommitLog file (the
// checkpoint covers everything), so it does not rebuild T/0's units: they
// must have survived. It returns how many messages T/0 had, the recovered
// store's T/0 end, and verify's report.
func newQueueCrashCase(t *testing.T, cfgHook func(*hooks.Engine)) (int64, int64, verify.Report) {
	t.Helper()
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyConfig(cfgHook)
	clock := clockstest.NewStepping(time.UnixMilli(1_000_000), time.Second) // past the checkpoint's 3 s margin
	cfg.Clock = clock
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := 0; s.CommitLog().MaxOffset() < 2*4096+100; i++ {
		topic := "T"
		if s.CommitLog().MaxOffset() >= 4096-500 {
			topic = "U"
		} else {
			n++
		}
		body := bytes.Repeat([]byte{byte('a' + i%26)}, 150)
		if _, err := s.Put(context.Background(), &engine.Message{Topic: topic, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if n <= 4 {
		t.Fatalf("T/0 has %d messages, want more than one ConsumeQueue file's 4", n)
	}
	syncAll(t, s)
	engineops.Of(s).Abandon()
	rfs, err := crashsim.New(fs.Crash(crashsim.Oldest), crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rcfg := tinyConfig(nil)
	rcfg.Clock = clock
	r, err := engine.Open(rfs, rcfg)
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	if from := r.Recovery().ScanFrom; from < 4096 {
		t.Fatalf("recovery scanned from %d, inside T/0's CommitLog file: the case cannot tell lost units from rebuilt ones", from)
	}
	end, vr := closeAndVerify(t, r, rfs)
	return n, end, vr
}

// TestNewQueueFilesSurviveAfterFlush: the dispatcher creates ConsumeQueue
// files without syncing their directory (nor, for a new queue, the
// directories above it); the ConsumeQueue flush must make those entries
// durable before it syncs the units and the checkpoint records them, or a
// power cut takes the queue away while the checkpoint says its units are
// safe, and recovery does not rebuild them.
func TestNewQueueFilesSurviveAfterFlush(t *testing.T) {
	n, end, rep := newQueueCrashCase(t, nil)
	if end != n {
		t.Errorf("T/0 ends at %d after recovery, want %d (its units were flushed and checkpointed)", end, n)
	}
	if !rep.OK() {
		t.Errorf("verify after recovery:\n%s\n%v", rep.Summary(), rep.Violations)
	}
}

// TestBrokenVariantNoDeferredDirSync shows the deferred directory sync
// necessary: without it the same power cut loses T/0's files.
func TestBrokenVariantNoDeferredDirSync(t *testing.T) {
	n, end, _ := newQueueCrashCase(t, func(h *hooks.Engine) { h.NoDeferredDirSync = true })
	if end >= n {
		t.Fatalf("T/0 ends at %d of %d without the deferred directory sync: the variant was not caught", end, n)
	}
	t.Logf("caught: T/0 ends at %d after recovery, %d messages were put to it", end, n)
}
