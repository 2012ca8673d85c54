package engine_test

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
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
// Garbage past the end is cut and logged. The broken variant (hooks
// NoStartupUnitCheck: RocketMQ's clean start) cuts T/2 at the damage and
// logs nothing.
func TestDamagedUnitsFoundAtStartup(t *testing.T) {
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: damagedQueueFileSize, ConsumeQueueUnits: 2000})
	intact := storeWithQueues(t, cfg)
	for _, tc := range []struct {
		name string
		at   int64 // first damaged byte of T/3
	}{
		{"middle", 200*engine.CQUnitSize + 7},
		{"head", 0},
		{"tail", damagedQueueMessages*engine.CQUnitSize - 100},
		{"past the end", damagedQueueMessages*engine.CQUnitSize + 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, broken := range []bool{false, true} {
				damaged := copyFs(t, intact)
				garbage := make([]byte, 100)
				rng := rand.New(rand.NewPCG(3, uint64(tc.at)))
				for i := range garbage {
					garbage[i] = byte(rng.Uint32())
				}
				writeAt(t, damaged, queueFile(2), tc.at, garbage)
				other := readAt(t, damaged, queueFile(3), 500*engine.CQUnitSize, engine.CQUnitSize)
				writeAt(t, damaged, queueFile(1), 500*engine.CQUnitSize, other)

				var logs bytes.Buffer
				cfg := cfg
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				hooks.EngineOf(&cfg).NoStartupUnitCheck = broken
				s, err := engine.Open(memfs.New(damaged), cfg)
				if err != nil {
					t.Fatal(err)
				}
				atStart := s.Health()
				startLog := logs.String()
				missing, wrong := 0, 0
				for q := 1; q <= 3; q++ {
					m, w := undelivered(q, pullAll(t, s, int32(q)))
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
					if missing == 0 && wrong == 0 && next == damagedQueueMessages && errorLogged {
						t.Fatal("without the start-up check every message was still delivered once and the damage logged: the test proves nothing")
					}
					continue
				}
				if missing != 0 || wrong != 0 || next != damagedQueueMessages {
					t.Fatalf("%d messages missing, %d wrong or twice, T/2 ends at %d (want %d)", missing, wrong, next, damagedQueueMessages)
				}
				if tc.name != "past the end" && (atStart.UnitMismatches == 0 || atStart.UnitsRepaired != atStart.UnitMismatches) {
					t.Fatalf("at start-up: %d mismatches, %d repaired; want the damaged T/3 units found and rewritten",
						atStart.UnitMismatches, atStart.UnitsRepaired)
				}
				if !errorLogged {
					t.Fatalf("start-up logged no ERROR for T/2:\n%s", startLog)
				}
				n := damagedQueueMessages * engine.CQUnitSize
				for q := 1; q <= 3; q++ {
					if !bytes.Equal(readAt(t, damaged, queueFile(q), 0, n), readAt(t, intact, queueFile(q), 0, n)) {
						t.Errorf("T/%d: the repaired units differ from an intact store's", q)
					}
				}
			}
		})
	}
}
