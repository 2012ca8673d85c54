package enginetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// damaged is a store written cleanly, then damaged.
type damaged struct {
	h    *harness
	puts []engine.PutResult // in put order; queue = i % 2
}

// inFile returns the indexes of the puts stored in CommitLog file n.
func (d *damaged) inFile(n int64) []int {
	var out []int
	for i, r := range d.puts {
		if r.WroteOffset/4096 == n {
			out = append(out, i)
		}
	}
	return out
}

func fileName(off int64) string { return fmt.Sprintf("commitlog/%020d", off-off%4096) }

// flip xors one byte of the record of put i at record position rel.
func (d *damaged) flip(t *testing.T, i int, rel int64, mask byte) {
	off := d.puts[i].WroteOffset + rel
	name := fileName(off)
	b := fileBytes(t, d.h.fs, name)
	patchFile(t, d.h.fs, name, off%4096, []byte{b[off%4096] ^ mask})
}

// wantTruncatedAt checks a store recovered after damage to put i: the
// CommitLog ends where that record began, every earlier message is intact,
// and the report says why.
func (d *damaged) wantTruncatedAt(t *testing.T, s *engine.Store, i int, reason error) {
	t.Helper()
	r := s.Recovery()
	if r.CommitLogEnd != d.puts[i].WroteOffset {
		t.Fatalf("recovered end %d, want %d (record %d): %+v", r.CommitLogEnd, d.puts[i].WroteOffset, i, r)
	}
	if !errors.Is(r.StopReason, reason) || !strings.Contains(r.StopReason.Error(), fmt.Sprint(" at ", d.puts[i].WroteOffset%4096)) {
		t.Fatalf("stop reason %v, want %v naming position %d", r.StopReason, reason, d.puts[i].WroteOffset%4096)
	}
	if r.DroppedBytes == 0 {
		t.Fatalf("nothing counted as dropped: %+v", r)
	}
	for q := int32(0); q < 2; q++ {
		want := int64((i + 1 - int(q)) / 2) // puts before i in queue q
		if got := s.MaxOffsetInQueue("bad", q); got != want {
			t.Fatalf("queue %d: max %d, want %d", q, got, want)
		}
		got := bodies(t, s, "bad", q)
		for k, b := range got {
			if b != badBody(2*k+int(q)) {
				t.Fatalf("queue %d message %d: %q", q, k, b)
			}
		}
	}
	// The store goes on from there.
	res := put(t, s, msg("bad", int32(i%2), "new", "", ""))
	if res.QueueOffset != int64(i/2) {
		t.Fatalf("next put got queue offset %d, want %d", res.QueueOffset, i/2)
	}
}

// open opens the damaged store, which must succeed.
// wantSkipped checks that recovery kept every record after the damaged
// record i (one flipped bit never deletes data after it): the
// whole log is recovered, the damage is reported at its offset, every
// other message is delivered in order and the damaged one never is.
func (d *damaged) wantSkipped(t *testing.T, s *engine.Store, i int) {
	t.Helper()
	r := s.Recovery()
	last := d.puts[len(d.puts)-1]
	if r.CommitLogEnd < last.WroteOffset+int64(last.WroteBytes) {
		t.Fatalf("recovered end %d, want at least %d: data after the damaged record %d was dropped: %+v",
			r.CommitLogEnd, last.WroteOffset+int64(last.WroteBytes), i, r)
	}
	if len(r.Damaged) != 1 || r.Damaged[0].Offset != d.puts[i].WroteOffset || r.Damaged[0].End != d.puts[i].WroteOffset+int64(d.puts[i].WroteBytes) {
		t.Fatalf("damaged ranges %+v, want one at [%d,+%d)", r.Damaged, d.puts[i].WroteOffset, d.puts[i].WroteBytes)
	}
	if h := s.Health(); h.DamagedRecords != 1 {
		t.Fatalf("health reports %d damaged records, want 1", h.DamagedRecords)
	}
	for q := int32(0); q < 2; q++ {
		var want, got []string
		for k := int(q); k < len(d.puts); k += 2 {
			if k != i {
				want = append(want, badBody(k))
			}
		}
		for off := s.MinOffsetInQueue("bad", q); off < s.MaxOffsetInQueue("bad", q); {
			g := get(t, s, "bad", q, off, 32, nil)
			if g.status != engine.Found && g.status != engine.NoMatchedMessage {
				t.Fatalf("queue %d at %d: %v", q, off, g)
			}
			for _, m := range g.msgs {
				got = append(got, string(m.Body))
			}
			off = g.next
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("queue %d delivers %d messages %q, want %d %q", q, len(got), got, len(want), want)
		}
	}
	res := put(t, s, msg("bad", int32(len(d.puts)%2), "new", "", ""))
	if res.QueueOffset != int64(len(d.puts)/2) {
		t.Fatalf("next put got queue offset %d, want %d", res.QueueOffset, len(d.puts)/2)
	}
}

func (d *damaged) open(t *testing.T) *engine.Store {
	t.Helper()
	s, err := engine.Open(d.h.fs, tinyConfig())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// wantPadded checks that recovery reports padding the named file.
func (d *damaged) wantPadded(t *testing.T, s *engine.Store, name string) {
	t.Helper()
	for _, p := range s.Recovery().PaddedFiles {
		if strings.Contains(p, name) {
			return
		}
	}
	t.Fatalf("padded files %q do not name %s", s.Recovery().PaddedFiles, name)
}

// firstEndingAfter returns the index of the first put whose record ends
// after CommitLog offset off.
func (d *damaged) firstEndingAfter(off int64) int {
	for i, r := range d.puts {
		if r.WroteOffset+int64(r.WroteBytes) > off {
			return i
		}
	}
	return len(d.puts)
}

func badBody(i int) string { return fmt.Sprint("record ", i, " ", strings.Repeat("r", 150)) }

func newDamaged(t *testing.T, h *harness) *damaged {
	s, err := engine.Open(h.fs, tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := &damaged{h: h}
	for i := 0; s.CommitLog().MaxOffset() < 2*4096+2000; i++ {
		d.puts = append(d.puts, put(t, s, msg("bad", int32(i%2), badBody(i), "T", "")))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

var badInputTests = []test{
	{"WrongSizedSegment", func(t *testing.T, h *harness) {
		// A short extra last file (a crash while creating it): padded,
		// and the data before it is all there.
		d := newDamaged(t, h)
		writeFile(t, h.fs, "commitlog/00000000000000012288", make([]byte, 1000))
		s := d.open(t)
		defer closeStore(t, s)
		d.wantPadded(t, s, "00000000000000012288")
		last := d.puts[len(d.puts)-1]
		if got := s.Recovery().CommitLogEnd; got != last.WroteOffset+int64(last.WroteBytes) {
			t.Fatalf("recovered end %d, want %d", got, last.WroteOffset+int64(last.WroteBytes))
		}
	}},
	{"WrongSizedMiddleSegment", func(t *testing.T, h *harness) {
		newDamaged(t, h)
		b := fileBytes(t, h.fs, "commitlog/00000000000000004096")
		writeFile(t, h.fs, "commitlog/00000000000000004096", b[:2048])
		wantOpenError(t, h, engine.ErrCorruptStore, "00000000000000004096")
	}},
	{"TruncatedLastFile", func(t *testing.T, h *harness) {
		// The last file cut mid-record: padded, then cut at the last
		// whole record like a torn tail.
		d := newDamaged(t, h)
		b := fileBytes(t, h.fs, "commitlog/00000000000000008192")
		writeFile(t, h.fs, "commitlog/00000000000000008192", b[:1500])
		s := d.open(t)
		defer closeStore(t, s)
		d.wantPadded(t, s, "00000000000000008192")
		i := d.firstEndingAfter(8192 + 1500)
		d.wantTruncatedAt(t, s, i, record.ErrCorrupt)
	}},
	{"EmptyFile", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		writeFile(t, h.fs, "commitlog/00000000000000008192", nil)
		s := d.open(t)
		defer closeStore(t, s)
		d.wantPadded(t, s, "00000000000000008192")
		if r := s.Recovery(); r.CommitLogEnd != 8192 || r.StopReason != nil {
			t.Fatalf("recovered end %d (%v), want 8192: the empty file held nothing", r.CommitLogEnd, r.StopReason)
		}
		i := d.firstEndingAfter(8192)
		for q := int32(0); q < 2; q++ {
			if got, want := s.MaxOffsetInQueue("bad", q), int64((i+1-int(q))/2); got != want {
				t.Fatalf("queue %d: max %d, want %d", q, got, want)
			}
		}
	}},
	{"MissingMiddleFile", func(t *testing.T, h *harness) {
		newDamaged(t, h)
		if err := h.fs.Remove("commitlog/00000000000000004096"); err != nil {
			t.Fatal(err)
		}
		wantOpenError(t, h, engine.ErrCorruptStore, "00000000000000008192")
	}},
	// Names the store never writes are not its files: FUSE's
	// .fuse_hidden*, NFS's .nfs*, a person's copy. They are left alone
	// with a warning, not read as segments and not refused.
	{"FileNameNot20Digits", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		writeFile(t, h.fs, "commitlog/12288", make([]byte, 4096))
		d.wantForeignIgnored(t, "commitlog/12288")
	}},
	{"ConsumeQueueFileNameNot20Digits", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		writeFile(t, h.fs, "consumequeue/bad/0/x0000000000000000160", make([]byte, 160))
		d.wantForeignIgnored(t, "consumequeue/bad/0/x0000000000000000160")
	}},
	{"FuseHiddenSecondNameOfSegment", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		writeFile(t, h.fs, "consumequeue/bad/1/.fuse_hidden0000000a00000001", fileBytes(t, h.fs, "consumequeue/bad/1/00000000000000000000"))
		d.wantForeignIgnored(t, "consumequeue/bad/1/.fuse_hidden0000000a00000001")
	}},
	{"ConsumeQueueWrongSize", func(t *testing.T, h *harness) {
		newDamaged(t, h)
		b := fileBytes(t, h.fs, "consumequeue/bad/1/00000000000000000000")
		writeFile(t, h.fs, "consumequeue/bad/1/00000000000000000000", b[:100])
		wantOpenError(t, h, engine.ErrCorruptStore, "consumequeue/bad/1/00000000000000000000")
	}},
	{"V2MagicRefused", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(2)[1]
		patchFile(t, h.fs, fileName(d.puts[i].WroteOffset), d.puts[i].WroteOffset%4096+4, []byte{0xDA, 0xA3, 0x20, 0xAB})
		wantOpenError(t, h, record.ErrUnsupportedVersion, fmt.Sprint(d.puts[i].WroteOffset))
	}},
	{"BitFlipInBody", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(2)[2]
		d.flip(t, i, 100, 0x01)
		cfg := tinyConfig()
		var log bytes.Buffer
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		s := h.open(cfg)
		d.wantSkipped(t, s, i)
		if !strings.Contains(s.Recovery().Damaged[0].Reason.Error(), "crc") {
			t.Fatalf("damage reason %v does not say crc", s.Recovery().Damaged[0].Reason)
		}
		// The damage is logged at ERROR, with the offset and the reason.
		if l := log.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, fmt.Sprint("offset=", d.puts[i].WroteOffset)) ||
			!strings.Contains(l, "crc") {
			t.Fatalf("log does not report the damage: %s", l)
		}
	}},
	{"BitFlipInPhysicalOffset", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(2)[0]
		d.flip(t, i, 35, 0x04)
		d.wantSkipped(t, h.open(tinyConfig()), i)
	}},
	{"BitFlipInTotalSize", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(2)[3]
		d.flip(t, i, 3, 0x02)
		d.wantSkipped(t, h.open(tinyConfig()), i)
	}},
	{"BitFlipInMagic", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(2)[1]
		d.flip(t, i, 5, 0x80)
		d.wantSkipped(t, h.open(tinyConfig()), i)
	}},
	{"BitFlipInEarlierFile", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		i := d.inFile(1)[4]
		d.flip(t, i, 120, 0x40)
		s := h.open(tinyConfig())
		d.wantSkipped(t, s, i)
		if names, _ := h.fs.List("commitlog"); len(names) < 3 {
			t.Fatalf("files after damage in file 1: %v", names)
		}
	}},
	{"BitFlipAfterCrash", func(t *testing.T, h *harness) {
		// Abnormal recovery (abort marker present) checks the same way.
		d := newDamaged(t, h)
		writeFile(t, h.fs, "abort", nil)
		i := d.inFile(2)[2]
		d.flip(t, i, 100, 0x01)
		s := h.open(tinyConfig())
		if !s.Recovery().Abnormal {
			t.Fatal("abort marker ignored")
		}
		// The checkpoint is newer than the records after the damage:
		// they were durable, so this is damage, not a torn write.
		d.wantSkipped(t, s, i)
	}},
	{"BitFlipInLastRecordIsATornTail", func(t *testing.T, h *harness) {
		// After a crash (the abort marker left): the last record may be
		// a write the crash tore. After a clean stop it is damage, kept
		// (Fixtures/FlippedByteInLastRecord).
		d := newDamaged(t, h)
		writeFile(t, h.fs, "abort", nil)
		i := len(d.puts) - 1
		d.flip(t, i, 100, 0x01)
		d.wantTruncatedAt(t, h.open(tinyConfig()), i, record.ErrCorrupt)
	}},
	{"UndecidableDamageRefusesToOpen", func(t *testing.T, h *harness) {
		// After a crash, with no checkpoint to prove the records after
		// the damage durable, a power cut could have produced the same
		// bytes: Open refuses, naming the file and offset, and changes
		// nothing; each documented choice then opens the store.
		d := newDamaged(t, h)
		writeFile(t, h.fs, "abort", nil)
		if err := h.fs.Remove("checkpoint"); err != nil {
			t.Fatal(err)
		}
		i := d.inFile(2)[2]
		d.flip(t, i, 100, 0x01)
		before := allFiles(t, h.fs, "commitlog")
		_, err := engine.Open(h.fs, tinyConfig())
		if !errors.Is(err, engine.ErrUndecidableDamage) || !errors.Is(err, engine.ErrCorruptStore) ||
			!strings.Contains(err.Error(), "00000000000000008192") || !strings.Contains(err.Error(), fmt.Sprint("offset ", d.puts[i].WroteOffset)) ||
			!strings.Contains(err.Error(), "OnUndecidableDamage") {
			t.Fatalf("open: %v, want ErrUndecidableDamage naming the file, the offset and the setting", err)
		}
		if after := allFiles(t, h.fs, "commitlog"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatal("a refused open changed the commitlog")
		}
		cfg := tinyConfig()
		cfg.OnUndecidableDamage = engine.DamageSkip
		s := h.open(cfg)
		d.wantSkipped(t, s, i)
	}},
	{"ShortCheckpointTreatedAsMissing", func(t *testing.T, h *harness) {
		// A 10-byte checkpoint is treated as a missing one: recovery
		// replays from the first file.
		d := newDamaged(t, h)
		writeFile(t, h.fs, "checkpoint", make([]byte, 10))
		s := d.open(t)
		defer closeStore(t, s)
		if r := s.Recovery(); r.CheckpointValid || r.CommitLogEnd != d.puts[len(d.puts)-1].WroteOffset+int64(d.puts[len(d.puts)-1].WroteBytes) {
			t.Fatalf("recovery with a short checkpoint: %+v", r)
		}
		if size, err := h.fs.Stat("checkpoint"); err != nil || size != 4096 {
			t.Fatalf("checkpoint not replaced: %d bytes, %v", size, err)
		}
	}},
	{"UndecidableDamageTruncatedWhenChosen", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		writeFile(t, h.fs, "abort", nil)
		if err := h.fs.Remove("checkpoint"); err != nil {
			t.Fatal(err)
		}
		i := d.inFile(2)[2]
		d.flip(t, i, 100, 0x01)
		cfg := tinyConfig()
		cfg.OnUndecidableDamage = engine.DamageTruncate
		s := h.open(cfg)
		if !s.Recovery().TruncatedAtDamage {
			t.Fatalf("report does not say it truncated at damage: %+v", s.Recovery())
		}
		d.wantTruncatedAt(t, s, i, record.ErrCorrupt)
	}},
	{"ConsumeQueuePastCommitLog", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		max0 := int64((len(d.puts) + 1) / 2)
		// Append a unit after the last one of queue 0, pointing past the
		// end of the CommitLog.
		name := fmt.Sprintf("consumequeue/bad/0/%020d", max0/8*8*20)
		var u [20]byte
		binary.BigEndian.PutUint64(u[:], uint64(3*4096+100))
		binary.BigEndian.PutUint32(u[8:], 250)
		if max0%8 == 0 {
			writeFile(t, h.fs, name, make([]byte, 160))
		}
		patchFile(t, h.fs, name, max0%8*20, u[:])
		s := h.open(tinyConfig())
		if got := s.MaxOffsetInQueue("bad", 0); got != max0 {
			t.Fatalf("queue 0 max %d, want %d", got, max0)
		}
		wantStatus(t, get(t, s, "bad", 0, max0, 32, nil), engine.OffsetOverflowOne, max0)
		if res := put(t, s, msg("bad", 0, "next", "", "")); res.QueueOffset != max0 {
			t.Fatalf("next queue offset %d", res.QueueOffset)
		}
		dispatched(t, s)
		g := get(t, s, "bad", 0, max0, 32, nil)
		if g.status != engine.Found || string(g.msgs[0].Body) != "next" {
			t.Fatalf("after the bad unit: %v", g)
		}
	}},
	{"GarbageCheckpoint", func(t *testing.T, h *harness) {
		d := newDamaged(t, h)
		garbage := make([]byte, 4096)
		for i := range garbage {
			garbage[i] = byte(i*131 + 7)
		}
		writeFile(t, h.fs, "checkpoint", garbage)
		writeFile(t, h.fs, "abort", nil) // so that recovery relies on it
		s := h.open(tinyConfig())
		r := s.Recovery()
		if r.CheckpointValid || !r.Abnormal || r.ScanFrom != 0 || r.CommitLogEnd != d.puts[len(d.puts)-1].WroteOffset+int64(d.puts[len(d.puts)-1].WroteBytes) {
			t.Fatalf("recovery with a garbage checkpoint: %+v", r)
		}
		if got := len(bodies(t, s, "bad", 0)) + len(bodies(t, s, "bad", 1)); got != len(d.puts) {
			t.Fatalf("%d messages, want %d", got, len(d.puts))
		}
	}},
	{"ZeroedTailPage", func(t *testing.T, h *harness) {
		// A write torn by a crash that left zeros in the middle of the
		// last record, with no checkpoint to prove it synced.
		d := newDamaged(t, h)
		writeFile(t, h.fs, "abort", nil)
		if err := h.fs.Remove("checkpoint"); err != nil {
			t.Fatal(err)
		}
		i := len(d.puts) - 1
		patchFile(t, h.fs, fileName(d.puts[i].WroteOffset), d.puts[i].WroteOffset%4096+60, make([]byte, 40))
		d.wantTruncatedAt(t, h.open(tinyConfig()), i, record.ErrCorrupt)
	}},
}

// wantOpenError opens the damaged store and wants a clear error, not a
// panic and not a store.
func wantOpenError(t *testing.T, h *harness, want error, mention string) {
	t.Helper()
	s, err := engine.Open(h.fs, tinyConfig())
	if err == nil {
		_ = s.Close() // the test fails either way
		t.Fatalf("damaged store opened; want %v", want)
	}
	if !errors.Is(err, want) || !strings.Contains(err.Error(), mention) {
		t.Fatalf("open: %v; want %v mentioning %q", err, want, mention)
	}
	// The failed open released everything: opening again fails the same
	// way rather than on the lock.
	if _, err2 := engine.Open(h.fs, tinyConfig()); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second open: %v, first: %v", err2, err)
	}
}

// wantForeignIgnored opens the store with name, a file the store does not
// write, in one of its directories: the open succeeds, every put is still
// in its queue, a warning names the file, and the file is left in place.
func (d *damaged) wantForeignIgnored(t *testing.T, name string) {
	t.Helper()
	cfg := tinyConfig()
	var log bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := d.h.open(cfg)
	if n := s.MaxOffsetInQueue("bad", 0) + s.MaxOffsetInQueue("bad", 1); n != int64(len(d.puts)) {
		t.Fatalf("queues hold %d messages, want %d", n, len(d.puts))
	}
	if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, name) {
		t.Fatalf("no warning naming %s; log:\n%s", name, l)
	}
	if _, err := d.h.fs.Stat(name); err != nil {
		t.Fatalf("%s: %v (it is not the store's to delete)", name, err)
	}
}
