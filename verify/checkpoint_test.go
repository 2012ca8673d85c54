package verify_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/verify"
)

// TestCheckpointViolationReadsAsDates: a checkpoint ahead of the data is
// reported with both times as dates, not only as epoch milliseconds.
func TestCheckpointViolationReadsAsDates(t *testing.T) {
	dir, _ := mmapStore(t)
	ahead := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	writeAt(t, dir, "checkpoint", 0, be64(ahead.UnixMilli()))
	rep := run(t, mustFS(t, dir))
	for _, v := range rep.Violations {
		if v.Kind == verify.KindCheckpoint {
			if !strings.Contains(v.Detail, "(2031-01-02T03:04:05.000Z) is ahead of the last record's store time") ||
				!regexp.MustCompile(`store time \d+ \(\d{4}-\d\d-\d\dT[0-9:.]+Z\)`).MatchString(v.Detail) {
				t.Fatalf("violation %q does not show the times as dates", v.Detail)
			}
			return
		}
	}
	t.Fatalf("no checkpoint violation: %v", rep.Violations)
}
