package engine_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// TestDamagedUnitsFoundAtStartup damages ConsumeQueue files of a store
// that was closed cleanly, as an operator's slip or a bad disk does while
// the store is stopped: 100 random bytes over units of T/2 (seeded, not
// shaped to survive recovery: units with negative or huge offsets, which a
// clean start used to take for the queue's end and cut everything after),
// and unit 500 of T/1 overwritten with unit 500 of T/3. Start-up finds the
// random bytes (ERROR, counted, rewritten from the CommitLog before the
// first pull); the first read finds the other queue's unit. Every consumer
// gets every message of its queue exactly once, and the queues' next
// offsets do not move (a put after the damage takes offset 1000).
// Garbage past the end is cut and logged. In queues of ten files the
// damage in the last three is found at start-up, older damage by the
// first read, which checks a unit that is not one against its record
// before its garbage offset or tags code can make it skip anything. The
// broken variants (hooks NoStartupUnitCheck: RocketMQ's clean start; with
// NoUnitCheck for older damage: its read path) lose messages.
func TestDamagedUnitsFoundAtStartup(t *testing.T) {
	const tenFiles = damagedQueueMessages / 10 // units a file: T/q has ten files
	intact := map[int64]afero.Fs{}
	for _, tc := range []struct {
		name  string
		units int64 // a ConsumeQueue file's units
		at    int64 // first damaged byte of T/2
		// atStart: start-up finds the damage (it reads each queue's last
		// three files); else the first read does.
		atStart bool
	}{
		{"middle", 2 * damagedQueueMessages, 200*engine.CQUnitSize + 7, true},
		{"head", 2 * damagedQueueMessages, 0, true},
		{"tail", 2 * damagedQueueMessages, damagedQueueMessages*engine.CQUnitSize - 100, true},
		{"past the end", 2 * damagedQueueMessages, damagedQueueMessages*engine.CQUnitSize + 40, true},
		{"third file from the end", tenFiles, 720 * engine.CQUnitSize, true},
		{"across two files", tenFiles, 798*engine.CQUnitSize + 3, true},
		{"old file", tenFiles, 150 * engine.CQUnitSize, false},
		{"head of the first file", tenFiles, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: damagedQueueFileSize, ConsumeQueueUnits: tc.units})
			if intact[tc.units] == nil {
				intact[tc.units] = storeWithQueues(t, cfg)
			}
			for _, broken := range []bool{false, true} {
				damaged := copyFs(t, intact[tc.units])
				garbage := make([]byte, 100)
				rng := rand.New(rand.NewPCG(3, uint64(tc.at)))
				for i := range garbage {
					garbage[i] = byte(rng.Uint32())
				}
				writeQueue(t, damaged, 2, tc.units, tc.at, garbage)
				other := readQueue(t, damaged, 3, tc.units, 500*engine.CQUnitSize, engine.CQUnitSize)
				writeQueue(t, damaged, 1, tc.units, 500*engine.CQUnitSize, other)

				var logs bytes.Buffer
				cfg := cfg
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				hooks.EngineOf(&cfg).NoStartupUnitCheck = broken
				// Damage start-up does not read is the read path's to find.
				hooks.EngineOf(&cfg).NoUnitCheck = broken && !tc.atStart
				s, err := engine.Open(memfs.New(damaged), cfg)
				if err != nil {
					t.Fatal(err)
				}
				atStart := s.Health()
				startLog := logs.String()
				missing, wrong := 0, 0
				for q := 1; q <= 3; q++ {
					// T/2's consumer subscribes by tag (the messages have
					// none: tags code 0), as garbage tags must not hide a
					// message from it.
					var f record.MessageFilter
					if q == 2 {
						f = untagged{}
					}
					m, w := undelivered(q, pullAllFiltered(t, s, int32(q), f))
					if m+w > 0 {
						t.Logf("T/%d: %d missing, %d wrong", q, m, w)
					}
					missing, wrong = missing+m, wrong+w
				}
				next := s.MaxOffsetInQueue("T", 2)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				t.Logf("broken=%v: %d missing, %d wrong or twice, T/2 ends at %d; at start-up %d mismatches, %d repaired",
					broken, missing, wrong, next, atStart.UnitMismatches, atStart.UnitsRepaired)
				errorLogged := strings.Contains(startLog, "level=ERROR") && strings.Contains(startLog, "queueId=2")
				if broken {
					if missing == 0 && wrong == 0 && next == damagedQueueMessages && (errorLogged || !tc.atStart) {
						t.Fatal("without the start-up check every message was still delivered once and the damage logged: the test proves nothing")
					}
					continue
				}
				if missing != 0 || wrong != 0 || next != damagedQueueMessages {
					t.Fatalf("%d messages missing, %d wrong or twice, T/2 ends at %d (want %d)", missing, wrong, next, damagedQueueMessages)
				}
				if tc.atStart && tc.name != "past the end" && (atStart.UnitMismatches == 0 || atStart.UnitsRepaired != atStart.UnitMismatches) {
					t.Fatalf("at start-up: %d mismatches, %d repaired; want the damaged T/2 units found and rewritten",
						atStart.UnitMismatches, atStart.UnitsRepaired)
				}
				if tc.atStart && !errorLogged {
					t.Fatalf("start-up logged no ERROR for T/2:\n%s", startLog)
				}
				n := int64(damagedQueueMessages * engine.CQUnitSize)
				for q := 1; q <= 3; q++ {
					if !bytes.Equal(readQueue(t, damaged, q, tc.units, 0, n), readQueue(t, intact[tc.units], q, tc.units, 0, n)) {
						t.Errorf("T/%d: the repaired units differ from an intact store's", q)
					}
				}
			}
		})
	}
}

// writeQueue writes b at byte offset at of T/q's units, whose files hold
// units units each.
func writeQueue(t *testing.T, afs afero.Fs, q int, units, at int64, b []byte) {
	t.Helper()
	size := units * engine.CQUnitSize
	for len(b) > 0 {
		file := at / size * size
		n := min(int64(len(b)), file+size-at)
		writeAt(t, afs, fmt.Sprintf("consumequeue/T/%d/%020d", q, file), at-file, b[:n])
		b, at = b[n:], at+n
	}
}

// readQueue reads n bytes at byte offset at of T/q's units.
func readQueue(t *testing.T, afs afero.Fs, q int, units, at, n int64) []byte {
	t.Helper()
	size := units * engine.CQUnitSize
	var out []byte
	for n > 0 {
		file := at / size * size
		k := min(n, file+size-at)
		out = append(out, readAt(t, afs, fmt.Sprintf("consumequeue/T/%d/%020d", q, file), at-file, int(k))...)
		at, n = at+k, n-k
	}
	return out
}

// untagged matches the messages without tags (tags code 0).
type untagged struct{}

func (untagged) IsMatchedByConsumeQueue(tagsCode int64) bool { return tagsCode == 0 }
func (untagged) IsMatchedByCommitLog(map[string]string) bool { return true }

// pullAllFiltered is pullAll with filter f (nil: every message).
func pullAllFiltered(t *testing.T, s *engine.Store, q int32, f record.MessageFilter) []string {
	t.Helper()
	var got []string
	for off, pulls := int64(0), 0; off < s.MaxOffsetInQueue("T", q); pulls++ {
		if pulls > 10*damagedQueueMessages {
			t.Fatalf("T/%d: no progress at offset %d", q, off)
		}
		r, err := s.GetMessage("T", q, off, 16, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Messages {
			got = append(got, recordBody(m.Record))
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return got
}
