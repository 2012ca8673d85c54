package enginetest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/fixture"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

var fixtureTests = []test{
	{"Store2021_8k", func(t *testing.T, h *harness) { testFixture(t, h, "store-2021-8k") }},
	{"Store2019Unit", func(t *testing.T, h *harness) { testFixture(t, h, "store-2019-unit") }},
	{"SizeDisagreesWithConfig", testFixtureSizeConflict},
	{"FlippedByteInLastRecord", testFixtureFlippedLastRecord},
	{"TruncatedMidRecord", testFixtureTruncatedMidRecord},
}

// fixtureRecords returns the start offsets of the fixture's 47 records.
func fixtureRecords(t *testing.T, b []byte) []int64 {
	t.Helper()
	var starts []int64
	for pos := int64(0); ; {
		info, err := record.Check(b[pos:], pos, true)
		if err != nil || info.Blank {
			break
		}
		starts = append(starts, pos)
		pos += int64(info.Size)
	}
	if len(starts) != 47 {
		t.Fatalf("fixture holds %d records, want 47", len(starts))
	}
	return starts
}

// wantFixturePrefix checks that queue abc/0 holds exactly the first n
// fixture messages, intact.
func wantFixturePrefix(t *testing.T, s *engine.Store, n int64) {
	t.Helper()
	if got := s.MaxOffsetInQueue("abc", 0); got != n {
		t.Fatalf("queue abc/0 holds %d messages, want %d", got, n)
	}
	for off := int64(0); off < n; {
		g := get(t, s, "abc", 0, off, 32, nil)
		for _, m := range g.msgs {
			if m.QueueOffset != off || string(m.Body) != "Once, there was a chance for me!" || m.Properties["TAGS"] != "TAG1" {
				t.Fatalf("message %d: %q %q", off, m.Body, m.Properties)
			}
			off++
		}
		if len(g.msgs) == 0 {
			t.Fatalf("at %d: %v", off, g)
		}
	}
}

// A byte flipped in the last record's body: recovery keeps the 46 before
// it, says where and why it stopped, and counts what it dropped. The
// store has no valid checkpoint, so nothing proves that the last record
// was synced (with one, it is damage kept: TestDamagedLastRecordAfterCleanStop).
func testFixtureFlippedLastRecord(t *testing.T, h *harness) {
	loadFixture(t, h, "store-2021-8k")
	name := "commitlog/00000000000000000000"
	b := fileBytes(t, h.fs, name)
	starts := fixtureRecords(t, b)
	last := starts[46]
	patchFile(t, h.fs, name, last+100, []byte{b[last+100] ^ 0x40})
	s := h.open(hooks.Manual(engine.Config{}))
	defer closeStore(t, s)
	r := s.Recovery()
	if r.CommitLogEnd != last || !errors.Is(r.StopReason, record.ErrCorrupt) || r.DroppedBytes == 0 {
		t.Fatalf("recovery: %+v; want the end at %d (record 46) with a corrupt-record reason", r, last)
	}
	wantFixturePrefix(t, s, 46)
}

// The file cut mid-record (a copy that stopped short): with the file size
// configured, the file is padded and recovered to the last whole record.
func testFixtureTruncatedMidRecord(t *testing.T, h *harness) {
	loadFixture(t, h, "store-2021-8k")
	name := "commitlog/00000000000000000000"
	b := fileBytes(t, h.fs, name)
	starts := fixtureRecords(t, b)
	cut := starts[30] + 50
	writeFile(t, h.fs, name, b[:cut])
	s := h.open(hooks.Manual(engine.Config{CommitLogFileSize: 8192}))
	defer closeStore(t, s)
	r := s.Recovery()
	if len(r.PaddedFiles) != 1 || r.CommitLogEnd != starts[30] || r.StopReason == nil {
		t.Fatalf("recovery: %+v; want %s padded and the end at record 30 (%d)", r, name, starts[30])
	}
	wantFixturePrefix(t, s, 30)
}

// loadFixture copies a RocketMQ-written store into h.fs (the originals
// are read-only).
func loadFixture(t *testing.T, h *harness, name string) {
	dir := fixture.Path(t, name)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, h.fs, filepath.ToSlash(rel), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testFixture opens a store written by RocketMQ (8 KiB CommitLog files,
// no ConsumeQueue, no checkpoint) and reads queue abc/0 back.
func testFixture(t *testing.T, h *harness, name string) {
	loadFixture(t, h, name)
	cfg := hooks.Manual(engine.Config{}) // sizes come from the files
	s := h.open(cfg)
	if got := s.Config().CommitLogFileSize; got != 8192 {
		t.Fatalf("commitlog file size %d, want 8192 from the file", got)
	}
	check := func(s *engine.Store, max int64) {
		t.Helper()
		if s.MinOffsetInQueue("abc", 0) != 0 || s.MaxOffsetInQueue("abc", 0) != max {
			t.Fatalf("queue abc/0: min %d max %d, want 0 and %d", s.MinOffsetInQueue("abc", 0), s.MaxOffsetInQueue("abc", 0), max)
		}
		var n int64
		for off := int64(0); off < 47; {
			if n >= 47 {
				break
			}
			g := get(t, s, "abc", 0, off, 32, nil)
			if g.status != engine.Found {
				t.Fatalf("at %d: %v", off, g)
			}
			for _, m := range g.msgs {
				if n == 47 {
					break // a message this test added
				}
				if m.QueueOffset != n || string(m.Body) != "Once, there was a chance for me!" ||
					m.Properties["TAGS"] != "TAG1" || m.Properties["KEYS"] == "" || m.Topic != "abc" {
					t.Fatalf("message %d: offset %d body %q props %q", n, m.QueueOffset, m.Body, m.Properties)
				}
				n++
			}
			off = g.next
		}
		if n != 47 {
			t.Fatalf("read %d messages", n)
		}
	}
	check(s, 47)
	if r := s.Recovery(); r.StopReason != nil || r.CommitLogEnd != 8192 || r.DroppedBytes != 0 {
		t.Fatalf("recovery of %s: %+v", name, r)
	}
	// The store goes on in the same format: new file, next offsets.
	res := put(t, s, msg("abc", 0, "and another", "TAG1", ""))
	if res.QueueOffset != 47 || res.WroteOffset != 8192 {
		t.Fatalf("put after the fixture: %+v", res)
	}
	s = h.reopen(s, cfg)
	if s.MaxOffsetInQueue("abc", 0) != 48 {
		t.Fatalf("after restart: max %d", s.MaxOffsetInQueue("abc", 0))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The rebuilt ConsumeQueue's size is taken from its file as well.
	s = h.open(hooks.Manual(engine.Config{CommitLogFileSize: 8192}))
	if s.Config().ConsumeQueueUnits != engine.DefaultConsumeQueueUnits {
		t.Fatalf("consume queue units %d", s.Config().ConsumeQueueUnits)
	}
	check(s, 48)
}

// testFixtureSizeConflict: an explicit size that disagrees with the files
// is a clear error.
func testFixtureSizeConflict(t *testing.T, h *harness) {
	loadFixture(t, h, "store-2021-8k")
	_, err := engine.Open(h.fs, hooks.Manual(engine.Config{CommitLogFileSize: 4096}))
	if !errors.Is(err, engine.ErrCorruptStore) {
		t.Fatalf("open with 4 KiB files configured: %v", err)
	}
	// ConsumeQueue files of a size other than configured.
	s := h.open(hooks.Manual(engine.Config{ConsumeQueueUnits: 16}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Open(h.fs, hooks.Manual(engine.Config{ConsumeQueueUnits: 32})); !errors.Is(err, engine.ErrCorruptStore) {
		t.Fatalf("open with 32-unit queues configured over 16-unit files: %v", err)
	}
	s = h.open(hooks.Manual(engine.Config{})) // sizes detected
	if s.Config().ConsumeQueueUnits != 16 || s.MaxOffsetInQueue("abc", 0) != 47 {
		t.Fatalf("detected %d units, max %d", s.Config().ConsumeQueueUnits, s.MaxOffsetInQueue("abc", 0))
	}
}
