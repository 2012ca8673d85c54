package faultlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// One line at the start, one a minute with the counts, one at the end;
// a new fault starts over.
func TestLogRateLimitsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	clock := clockwork.NewFakeClockAt(time.Unix(1000, 0))
	l := &Log{Logger: slog.New(slog.NewTextHandler(&buf, nil)), Level: slog.LevelError, Clock: clock}
	errFull := errors.New("no space left on device")
	logged := 0
	for range 193 { // one failure every 1.4 s for 4.5 minutes
		if l.Failed("save failed", errFull, "file", "f.json") {
			logged++
		}
		clock.Advance(1400 * time.Millisecond)
	}
	if logged != 5 { // at 0 s, 60.2, 120.4, 180.6, 240.8
		t.Fatalf("%d lines for 193 failures over 4.5 minutes, want 5:\n%s", logged, buf.String())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[1], "failures=44") || !strings.Contains(lines[1], "suppressed=42") ||
		!strings.Contains(lines[1], "level=ERROR") || !strings.Contains(lines[1], "file=f.json") {
		t.Fatalf("repeat line: %s", lines[1])
	}
	if !l.Failing() || !l.Resumed("saved again") || l.Failing() {
		t.Fatal("Resumed did not end the fault")
	}
	if last := buf.String(); !strings.Contains(last, `msg="saved again" failures=193`) {
		t.Fatalf("end line: %s", last)
	}
	if l.Resumed("saved again") {
		t.Fatal("Resumed without a fault logged")
	}
	buf.Reset()
	if !l.Failed("save failed", errFull) || strings.Contains(buf.String(), "failures=") {
		t.Fatalf("a new fault's first line: %q", buf.String())
	}
}
