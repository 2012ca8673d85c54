package offset_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/crashsim"
)

// TestPersistScheduledOnFullDisk: with the disk full, every scheduled save
// fails; the log gets one ERROR when it starts and at most one a minute
// after (193 failures in 4.5 minutes once made 193 lines), each repeat
// with the failure count, and the first save that works is logged with the
// number of failures.
func TestPersistScheduledOnFullDisk(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	fs.SetInjector(crashsim.InjectorFunc(func(op crashsim.Op) error {
		if full.Load() && (op.Kind == crashsim.OpCreate || op.Kind == crashsim.OpWrite) {
			return crashsim.ErrNoSpace
		}
		return nil
	}))
	var buf bytes.Buffer
	m, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClockAt(time.Unix(1000, 0))
	m.SetClock(clock)
	full.Store(true)
	for i := range 193 {
		m.Commit("h", "g", "T", 0, int64(i))
		if err := m.PersistScheduled(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("save %d on a full disk: %v, want ENOSPC", i, err)
		}
		clock.Advance(1400 * time.Millisecond)
	}
	if n := strings.Count(buf.String(), "level=ERROR"); n != 5 {
		t.Fatalf("%d ERROR lines for 193 failures in 4.5 minutes, want 5 (one a minute):\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "failures=44") {
		t.Fatalf("a repeat line without the failure count:\n%s", buf.String())
	}
	full.Store(false)
	if err := m.PersistScheduled(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "consumer offsets saved again after 193 failures") {
		t.Fatalf("the end of the fault is not logged:\n%s", buf.String())
	}
	if err := m.PersistScheduled(); err != nil || strings.Count(buf.String(), "saved again") != 1 {
		t.Fatalf("a later save logged again (%v):\n%s", err, buf.String())
	}
}
