package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

const (
	damagedQueueMessages = 1000
	// damagedQueueFileSize is the CommitLog file size: the messages
	// fill the first file and part of the second.
	damagedQueueFileSize = 256 << 10
)

// storeWithQueues puts damagedQueueMessages messages to each of T/1, T/2
// and T/3, interleaved, and closes the store cleanly. Each body names its
// queue and queue offset.
func storeWithQueues(t *testing.T, cfg engine.Config) afero.Fs {
	t.Helper()
	afs := afero.NewMemMapFs()
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range damagedQueueMessages {
		for q := int32(1); q <= 3; q++ {
			if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: q, Body: []byte(fmt.Sprintf("q%d-%d", q, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return afs
}

// queueFile is the path of the first ConsumeQueue file of T/q.
func queueFile(q int) string { return fmt.Sprintf("consumequeue/T/%d/%020d", q, 0) }

// damageUnits reproduces two damaged ConsumeQueue files of a stopped
// store: 100 random bytes over T/3 from unit 200 (five units; each points
// into the CommitLog's data, so that recovery, which cuts a queue at its
// first unit that is not a positive offset and size ending before the
// CommitLog's end, keeps them), and unit 500 of
// T/1 overwritten with unit 500 of T/2 (a valid record of another queue).
func damageUnits(t *testing.T, afs afero.Fs) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 100)
	for u := 0; u < 5; u++ {
		b := garbage[u*engine.CQUnitSize:]
		binary.BigEndian.PutUint64(b, rng.Uint64N(200_000))
		binary.BigEndian.PutUint32(b[8:], uint32(1+rng.IntN(4096)))
		binary.BigEndian.PutUint64(b[12:], rng.Uint64())
	}
	// The first one straddles the end of the first CommitLog file: its
	// view fails, and RocketMQ's read path takes the record for removed
	// and skips every unit pointing into that file.
	binary.BigEndian.PutUint64(garbage, uint64(damagedQueueFileSize-50))
	binary.BigEndian.PutUint32(garbage[8:], 100)
	writeAt(t, afs, queueFile(3), 200*engine.CQUnitSize, garbage)
	other := readAt(t, afs, queueFile(2), 500*engine.CQUnitSize, engine.CQUnitSize)
	writeAt(t, afs, queueFile(1), 500*engine.CQUnitSize, other)
}

func writeAt(t *testing.T, afs afero.Fs, name string, off int64, b []byte) {
	t.Helper()
	f, err := afs.OpenFile(name, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func readAt(t *testing.T, afs afero.Fs, name string, off int64, n int) []byte {
	t.Helper()
	f, err := afs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// pullAll pulls T/q from offset 0 in batches of 16 as a consumer does,
// following NextBeginOffset, and returns the bodies it got.
func pullAll(t *testing.T, s *engine.Store, q int32) []string {
	t.Helper()
	return pullAllFiltered(t, s, q, nil)
}

// recordBody is the body of rec, or a description of the bytes served
// when they are not a record.
func recordBody(rec []byte) string {
	m, err := record.Decode(rec, -1, false)
	if err != nil {
		return fmt.Sprintf("not a record: %v", err)
	}
	return string(m.Body)
}

// undelivered compares what a consumer of T/q got with what was stored:
// the messages missing, and those delivered that are not the queue's (or
// twice).
func undelivered(q int, got []string) (missing, wrong int) {
	seen := map[string]int{}
	for _, b := range got {
		seen[b]++
		if !strings.HasPrefix(b, fmt.Sprintf("q%d-", q)) || seen[b] > 1 {
			wrong++
		}
	}
	for i := range damagedQueueMessages {
		if seen[fmt.Sprintf("q%d-%d", q, i)] == 0 {
			missing++
		}
	}
	return missing, wrong
}

// TestDamagedUnitsRepairedOnRead: ConsumeQueue units that do not match
// the record they point at are never served, are logged at ERROR and
// counted, and the queue is rewritten from the CommitLog while the store
// runs: every consumer gets every message of its queue exactly once. The
// broken variant (hooks NoUnitCheck, RocketMQ 4.9.4's read path) serves
// T/2's message to T/1's consumers and skips hundreds of T/3's.
func TestDamagedUnitsRepairedOnRead(t *testing.T) {
	var logs bytes.Buffer
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: damagedQueueFileSize, ConsumeQueueUnits: 2000,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	afs := storeWithQueues(t, cfg)
	damageUnits(t, afs)
	for _, broken := range []bool{false, true} {
		cfg := cfg
		hooks.EngineOf(&cfg).NoUnitCheck = broken
		copied := copyFs(t, afs)
		s, err := engine.Open(memfs.New(copied), cfg)
		if err != nil {
			t.Fatal(err)
		}
		missing, wrong := 0, 0
		for q := 1; q <= 3; q++ {
			m, w := undelivered(q, pullAll(t, s, int32(q)))
			t.Logf("broken=%v T/%d: %d of %d missing, %d wrong or twice", broken, q, m, damagedQueueMessages, w)
			missing, wrong = missing+m, wrong+w
		}
		h := s.Health()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if broken {
			if missing == 0 && wrong == 0 {
				t.Fatal("without the unit check every message was still delivered once: the test proves nothing")
			}
			continue
		}
		if missing != 0 || wrong != 0 {
			t.Fatalf("%d messages missing, %d wrong or twice", missing, wrong)
		}
		if h.UnitMismatches != 6 || h.UnitsRepaired != 6 || h.UnitsLost != 0 {
			t.Fatalf("health: %d mismatches, %d repaired, %d lost; want 6, 6, 0", h.UnitMismatches, h.UnitsRepaired, h.UnitsLost)
		}
		// Each damaged range is logged, the second queue's as well as the
		// first's: damage in one queue does not silence another's.
		for _, where := range []string{"queueId=1 from=500 to=501", "queueId=3 from=200 to=205"} {
			if !errorLineWith(logs.String(), "do not match", where) {
				t.Fatalf("no ERROR logged for the damaged units of T (%s):\n%s", where, logs.String())
			}
		}
		// The repair is on disk: the units are those of an intact store.
		want := storeWithQueues(t, cfg)
		for q := 1; q <= 3; q++ {
			n := damagedQueueMessages * engine.CQUnitSize
			if !bytes.Equal(readAt(t, copied, queueFile(q), 0, n), readAt(t, want, queueFile(q), 0, n)) {
				t.Errorf("T/%d: the repaired units differ from an intact store's", q)
			}
		}
	}
}

// errorLineWith reports whether logs has an ERROR line holding every one
// of parts.
func errorLineWith(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		ok := strings.Contains(line, "level=ERROR")
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// copyFs copies every file of src into a new in-memory file system.
func copyFs(t *testing.T, src afero.Fs) afero.Fs {
	t.Helper()
	dst := afero.NewMemMapFs()
	err := afero.Walk(src, "", func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := afero.ReadFile(src, p)
		if err != nil {
			return err
		}
		return afero.WriteFile(dst, p, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// BenchmarkGetMessage pulls 16 messages of 200 bytes from one of four
// queues, with the read path's unit check (unitcheck=on) and without it
// (unitcheck=off, hooks NoUnitCheck: the read path before the check).
func BenchmarkGetMessage(b *testing.B) {
	for _, check := range []bool{true, false} {
		b.Run(map[bool]string{true: "unitcheck=on", false: "unitcheck=off"}[check], func(b *testing.B) {
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 20})
			hooks.EngineOf(&cfg).NoUnitCheck = !check
			s, err := engine.Open(memfs.New(nil), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const n = 4096
			body := bytes.Repeat([]byte("x"), 200)
			for i := range n {
				if _, err := s.Put(context.Background(), &engine.Message{Topic: "BenchTopic", QueueID: int32(i % 4), Body: body}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := engineops.Of(s).Dispatch(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for b.Loop() {
				r, err := s.GetMessage("BenchTopic", 1, off, 16, nil)
				if err != nil || len(r.Messages) != 16 {
					b.Fatalf("%v, %d messages", err, len(r.Messages))
				}
				r.Release()
				if off += 16; off+16 > n/4 {
					off = 0
				}
			}
		})
	}
}
