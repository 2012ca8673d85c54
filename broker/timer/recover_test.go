package timer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// TestDamagedTimerFiles: a timer store that contradicts its config or
// itself fails to open with an error naming what and where, and never
// serves a wrong wheel.
func TestDamagedTimerFiles(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, e *env)
		want   error
		text   string
	}{
		{"precision changed", func(t *testing.T, e *env) { e.cfg.PrecisionMs = 100 }, ErrBadConfig, "timerPrecisionMs 1000"},
		{"max delay changed", func(t *testing.T, e *env) { e.cfg.MaxDelay = 2 * time.Hour }, ErrBadConfig, "wheel slots"},
		{"wheel file cut", func(t *testing.T, e *env) {
			if err := e.fs.Remove(wheelFile); err != nil {
				t.Fatal(err)
			}
			seg, err := e.fs.Create(wheelFile, 64)
			if err != nil {
				t.Fatal(err)
			}
			_ = seg.Close()
		}, ErrCorrupt, "timerwheel holds 64 bytes"},
		{"TimerLog file cut", func(t *testing.T, e *env) {
			if err := e.fs.Remove(logDir + "/00000000000000000000"); err != nil {
				t.Fatal(err)
			}
			seg, err := e.fs.Create(logDir+"/00000000000000000000", 100)
			if err != nil {
				t.Fatal(err)
			}
			_ = seg.Close()
		}, ErrCorrupt, "holds 100 bytes"},
		{"checkpoint garbage", func(t *testing.T, e *env) {
			for _, n := range []string{checkpointFile, checkpointFile + backend.BackupSuffix} {
				_ = e.fs.Remove(n)
				if err := backend.WriteFileAtomic(e.fs, n, []byte("{not json")); err != nil {
					t.Fatal(err)
				}
			}
			_ = e.fs.Remove(checkpointFile + backend.BackupSuffix)
		}, nil, "timercheck.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, hooks.Timer{})
			e.sendAt("a", startClock+5000)
			e.advance()
			e.close()
			c.damage(t, e)
			s, err := engine.Open(e.fs, hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 256, Logger: quiet, Clock: e.clock}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := e.cfg
			svc, err := New(e.fs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = svc.Start(s)
			if err == nil {
				svc.Abandon()
				t.Fatal("opened")
			}
			if c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("%v, want %v with %q", err, c.want, c.text)
			}
		})
	}
}

// TestIdleRecoveryReadsFromTheFirstNewTimer: a service with nothing
// pending takes no checkpoint however much else the CommitLog gains; a
// recovery after a power cut then reads the CommitLog for deliveries
// from the first timer message the checkpoint did not enqueue, not from
// the checkpoint's scan start, and delivers that message once.
func TestIdleRecoveryReadsFromTheFirstNewTimer(t *testing.T) {
	e := newEnv(t, hooks.Timer{})
	e.sendAt("a", startClock+1000)
	e.step(2 * time.Second)
	e.advance()
	if err := e.svc.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	const others = 50
	for i := range others {
		if _, err := e.store.Put(context.Background(), &record.Message{Topic: "Other", Body: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	e.sendAt("b", startClock+3000)
	e.flush()
	e.powerCut()
	if n := e.svc.scanned; n > 2 {
		t.Fatalf("recovery read %d records for deliveries, want at most 2 (b and what follows it), not the %d others", n, others)
	}
	e.step(2 * time.Second)
	e.advance()
	if got := keys(e.delivered()); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("delivered %v, want a and b once each", got)
	}
}
