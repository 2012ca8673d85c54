package enginetest

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
)

var rollingTests = []test{
	{"BlankExactFitAndJustMiss", testBlank},
	{"ManyFiles", testManyFiles},
	{"PreBlankFill", testPreBlank},
}

// bodyFor returns a body that makes a record of topic "r", no properties
// and IPv4 hosts exactly size bytes (91 fixed + body + 1 topic byte).
func bodyFor(size int) string { return strings.Repeat("b", size-92) }

func blankAt(t *testing.T, h *harness, file string, pos int64, length int32) {
	t.Helper()
	b := fileBytes(t, h.fs, "commitlog/"+file)
	if got := int32(binary.BigEndian.Uint32(b[pos:])); got != length {
		t.Fatalf("%s at %d: blank length %d, want %d", file, pos, got, length)
	}
	if got := binary.BigEndian.Uint32(b[pos+4:]); got != 0xCBD43194 {
		t.Fatalf("%s at %d: magic %08X, want the BLANK magic", file, pos, got)
	}
}

func testBlank(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	r := func(size int) engine.PutResult {
		res := put(t, s, &engine.Message{Topic: "r", Body: []byte(bodyFor(size))})
		if int(res.WroteBytes) != size {
			t.Fatalf("record of %d bytes, want %d", res.WroteBytes, size)
		}
		return res
	}
	a := r(192)
	// Exactly fits: the record leaves the 8 bytes a BLANK needs.
	b := r(4096 - 192 - 8)
	c := r(102)
	if a.WroteOffset != 0 || b.WroteOffset != 192 || c.WroteOffset != 4096 {
		t.Fatalf("offsets %d %d %d", a.WroteOffset, b.WroteOffset, c.WroteOffset)
	}
	// Just misses: one byte more than fits with the BLANK.
	d := r(4096 - 102 - 7)
	if d.WroteOffset != 8192 {
		t.Fatalf("record that just misses was written at %d, want 8192", d.WroteOffset)
	}
	// A record that exactly fills the room but one byte (no room for BLANK).
	e := r(4096 - int(d.WroteBytes) - 8 + 1)
	if e.WroteOffset != 12288 {
		t.Fatalf("record e at %d", e.WroteOffset)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	blankAt(t, h, "00000000000000000000", 4088, 8)
	blankAt(t, h, "00000000000000004096", 102, 4096-102)
	blankAt(t, h, "00000000000000008192", int64(d.WroteBytes), 4096-d.WroteBytes)
	s = h.open(tinyConfig())
	g := get(t, s, "r", 0, 0, 32, nil)
	wantStatus(t, g, engine.Found, 5)
	for i, res := range []engine.PutResult{a, b, c, d, e} {
		if g.msgs[i].CommitLogOffset != res.WroteOffset {
			t.Fatalf("message %d at %d, want %d", i, g.msgs[i].CommitLogOffset, res.WroteOffset)
		}
	}
	if max := s.CommitLog().MaxOffset(); max != e.WroteOffset+int64(e.WroteBytes) {
		t.Fatalf("commitlog max %d after reopen, want %d", max, e.WroteOffset+int64(e.WroteBytes))
	}
}

func testManyFiles(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	const n = 300
	for i := 0; i < n; i++ {
		put(t, s, msg("many", int32(i%2), fmt.Sprint(strings.Repeat("m", i%50), i), "", ""))
	}
	dispatched(t, s)
	check := func(s *engine.Store) {
		t.Helper()
		for q := int32(0); q < 2; q++ {
			var all []string
			for off := int64(0); off < n/2; {
				g := get(t, s, "many", q, off, 32, nil)
				if g.status != engine.Found {
					t.Fatalf("queue %d at %d: %v", q, off, g)
				}
				for _, m := range g.msgs {
					all = append(all, string(m.Body))
				}
				off = g.next
			}
			for i, b := range all {
				if want := fmt.Sprint(strings.Repeat("m", (2*i+int(q))%50), 2*i+int(q)); b != want {
					t.Fatalf("queue %d message %d: %q, want %q", q, i, b, want)
				}
			}
		}
	}
	check(s)
	s = h.reopen(s, tinyConfig())
	check(s)
}

// testPreBlank builds a ConsumeQueue for a queue whose first index is not
// 0: the CommitLog's first file and every ConsumeQueue are removed, so the
// rebuilt queue starts at the first message of the second file.
func testPreBlank(t *testing.T, h *harness) {
	cfg := tinyConfig()
	cfg.ConsumeQueueUnits = 64
	s := h.open(cfg)
	var first engine.PutResult
	for i := 0; i < 60; i++ {
		res := put(t, s, msg("pb", 0, fmt.Sprint("pre-blank ", i, strings.Repeat(".", 100)), "", ""))
		if res.WroteOffset >= 4096 && first.MsgNum == 0 {
			first = res
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"commitlog/00000000000000000000"} {
		if err := h.fs.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.fs.RemoveAll("consumequeue"); err != nil {
		t.Fatal(err)
	}
	s = h.open(cfg)
	minOff := first.QueueOffset
	if minOff == 0 || minOff >= 64 {
		t.Fatalf("test needs the first surviving index inside the first file, got %d", minOff)
	}
	if got := s.MinOffsetInQueue("pb", 0); got != minOff {
		t.Fatalf("min offset %d, want %d", got, minOff)
	}
	if got := s.MaxOffsetInQueue("pb", 0); got != 60 {
		t.Fatalf("max offset %d, want 60", got)
	}
	wantStatus(t, get(t, s, "pb", 0, 0, 32, nil), engine.OffsetTooSmall, minOff)
	wantStatus(t, get(t, s, "pb", 0, minOff-1, 32, nil), engine.OffsetTooSmall, minOff)
	g := get(t, s, "pb", 0, minOff, 1, nil)
	wantStatus(t, g, engine.Found, minOff+1)
	if g.msgs[0].CommitLogOffset != first.WroteOffset {
		t.Fatalf("first message at %d, want %d", g.msgs[0].CommitLogOffset, first.WroteOffset)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The units before the first are RocketMQ's blank fillers.
	cq := fileBytes(t, h.fs, "consumequeue/pb/0/00000000000000000000")
	for i := int64(0); i < minOff; i++ {
		u := cq[i*20:]
		if binary.BigEndian.Uint64(u) != 0 || binary.BigEndian.Uint32(u[8:]) != 0x7FFFFFFF || binary.BigEndian.Uint64(u[12:]) != 0 {
			t.Fatalf("unit %d is % x, want the pre-blank (0, MaxInt32, 0)", i, u[:20])
		}
	}
	if off := int64(binary.BigEndian.Uint64(cq[minOff*20:])); off != first.WroteOffset {
		t.Fatalf("unit %d points at %d, want %d", minOff, off, first.WroteOffset)
	}
	// And the queue survives another restart, blanks and all.
	s = h.open(cfg)
	if s.MinOffsetInQueue("pb", 0) != minOff || s.MaxOffsetInQueue("pb", 0) != 60 {
		t.Fatalf("after restart: min %d max %d", s.MinOffsetInQueue("pb", 0), s.MaxOffsetInQueue("pb", 0))
	}
	if res := put(t, s, msg("pb", 0, "next", "", "")); res.QueueOffset != 60 {
		t.Fatalf("next queue offset %d", res.QueueOffset)
	}
}
