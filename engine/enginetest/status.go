package enginetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
)

var statusTests = []test{
	{"Basic", testStatusBasic},
	{"NoMessageInQueue", testNoMessageInQueue},
	{"TransferLimitsInMemory", testLimitsInMemory},
	{"TransferLimitsInDisk", testLimitsInDisk},
	{"ScanStopsAtConsumeQueueFileEnd", testScanOneFile},
}

var filterTests = []test{
	{"Tags", testTagFilter},
}

func testStatusBasic(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	wantStatus(t, get(t, s, "nope", 0, 0, 32, nil), engine.NoMatchedLogicQueue, 0)
	wantStatus(t, get(t, s, "nope", 0, 5, 32, nil), engine.NoMatchedLogicQueue, 0)
	for i := 0; i < 10; i++ {
		put(t, s, msg("st", 0, fmt.Sprint(i), "A", ""))
	}
	dispatched(t, s)
	wantStatus(t, get(t, s, "st", 1, 0, 32, nil), engine.NoMatchedLogicQueue, 0)
	g := get(t, s, "st", 0, 0, 4, nil)
	wantStatus(t, g, engine.Found, 4)
	if g.min != 0 || g.max != 10 || len(g.msgs) != 4 {
		t.Fatalf("found %v", g)
	}
	wantStatus(t, get(t, s, "st", 0, 4, 32, nil), engine.Found, 8) // one ConsumeQueue file per scan
	wantStatus(t, get(t, s, "st", 0, 8, 32, nil), engine.Found, 10)
	wantStatus(t, get(t, s, "st", 0, 10, 32, nil), engine.OffsetOverflowOne, 10)
	// 4.9.4 (#4215): never back to 0, even though min is 0.
	wantStatus(t, get(t, s, "st", 0, 11, 32, nil), engine.OffsetOverflowBadly, 10)
	wantStatus(t, get(t, s, "st", 0, 1<<40, 32, nil), engine.OffsetOverflowBadly, 10)
	f, err := filter.NewTagFilter("B")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, get(t, s, "st", 0, 3, 32, f), engine.NoMatchedMessage, 8) // stops at the CQ file end (8 units)
	wantStatus(t, get(t, s, "st", 0, 8, 32, f), engine.NoMatchedMessage, 10)
	wantStatus(t, get(t, s, "st", 0, -1, 32, nil), engine.OffsetTooSmall, 0)
}

// testNoMessageInQueue makes a queue that exists but holds nothing: its
// only message, the last, is torn by a crash (a bit flip with the abort
// marker left) and recovery truncates it away.
func testNoMessageInQueue(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	put(t, s, msg("keep", 0, "kept", "", ""))
	res := put(t, s, msg("empty", 0, "lost", "", ""))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flipBodyByte(t, h, res)
	writeFile(t, h.fs, "abort", nil)
	s = h.open(tinyConfig())
	if r := s.Recovery(); r.CommitLogEnd != res.WroteOffset || r.StopReason == nil {
		t.Fatalf("recovery %+v, want a stop at %d", r, res.WroteOffset)
	}
	g := get(t, s, "empty", 0, 0, 32, nil)
	wantStatus(t, g, engine.NoMessageInQueue, 0)
	wantStatus(t, get(t, s, "keep", 0, 0, 32, nil), engine.Found, 1)
}

// flipBodyByte flips a bit in the last body byte of the record res wrote,
// so that its BODYCRC no longer matches.
func flipBodyByte(t *testing.T, h *harness, res engine.PutResult) {
	t.Helper()
	const fileSize = 4096
	name := fmt.Sprintf("commitlog/%020d", res.WroteOffset-res.WroteOffset%fileSize)
	pos := res.WroteOffset%fileSize + 88 // first body byte (IPv4 hosts)
	b := fileBytes(t, h.fs, name)
	patchFile(t, h.fs, name, pos, []byte{b[pos] ^ 0x10})
}

// testLimitsInMemory: 32 messages or 256 KiB per result by default.
func testLimitsInMemory(t *testing.T, h *harness) {
	cfg := tinyConfig()
	cfg.CommitLogFileSize = 1 << 20
	cfg.ConsumeQueueUnits = 1000
	s := h.open(cfg)
	for i := 0; i < 40; i++ {
		put(t, s, &engine.Message{Topic: "lim", Body: []byte(bodyFor(1000))})
	}
	dispatched(t, s)
	wantStatus(t, get(t, s, "lim", 0, 0, 64, nil), engine.Found, 32)
	wantStatus(t, get(t, s, "lim", 0, 32, 64, nil), engine.Found, 40)
	wantStatus(t, get(t, s, "lim", 0, 5, 3, nil), engine.Found, 8) // maxMsgNums
	cfg.MaxTransferBytesOnMessageInMemory = 3500
	s = h.reopen(s, cfg)
	g := get(t, s, "lim", 0, 0, 64, nil)
	wantStatus(t, g, engine.Found, 3) // 3 * 1000 <= 3500 < 4 * 1000
	// The first message is always returned, even over the byte limit.
	cfg.MaxTransferBytesOnMessageInMemory = 10
	s = h.reopen(s, cfg)
	wantStatus(t, get(t, s, "lim", 0, 0, 64, nil), engine.Found, 1)
}

// testLimitsInDisk forces every message to count as "in disk" (no memory
// at all) so that the 8 messages / 64 KiB limits apply.
func testLimitsInDisk(t *testing.T, h *harness) {
	cfg := tinyConfig()
	cfg.CommitLogFileSize = 1 << 20
	cfg.ConsumeQueueUnits = 1000
	cfg.TotalPhysicalMemory = 1
	s := h.open(cfg)
	for i := 0; i < 40; i++ {
		put(t, s, &engine.Message{Topic: "disk", Body: []byte(bodyFor(10000))})
	}
	dispatched(t, s)
	g := get(t, s, "disk", 0, 0, 64, nil)
	wantStatus(t, g, engine.Found, 6) // 6 * 10000 <= 64 KiB < 7 * 10000
	cfg.MaxTransferBytesOnMessageInDisk = 1 << 20
	s = h.reopen(s, cfg)
	g = get(t, s, "disk", 0, 0, 64, nil)
	wantStatus(t, g, engine.Found, 8)
	wantStatus(t, get(t, s, "disk", 0, 36, 64, nil), engine.Found, 40)
}

// testScanOneFile: a scan never crosses a ConsumeQueue file.
func testScanOneFile(t *testing.T, h *harness) {
	s := h.open(tinyConfig()) // 8 units per file
	for i := 0; i < 20; i++ {
		put(t, s, msg("one", 0, "x", "", ""))
	}
	dispatched(t, s)
	wantStatus(t, get(t, s, "one", 0, 0, 32, nil), engine.Found, 8)
	wantStatus(t, get(t, s, "one", 0, 6, 32, nil), engine.Found, 8)
	wantStatus(t, get(t, s, "one", 0, 16, 32, nil), engine.Found, 20)
}

func testTagFilter(t *testing.T, h *harness) {
	cfg := tinyConfig()
	cfg.ConsumeQueueUnits = 100
	cfg.CommitLogFileSize = 1 << 20
	s := h.open(cfg)
	tags := []string{"A", "B", "", "C", "A", "tag with spaces", "B", "\u00e9t\u00e9", "A"}
	for i, tag := range tags {
		put(t, s, msg("ft", 0, fmt.Sprint(i), tag, ""))
	}
	dispatched(t, s)
	for _, c := range []struct {
		expr string
		want []int
	}{
		{"*", []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"A", []int{0, 4, 8}},
		{"A || B", []int{0, 1, 4, 6, 8}},
		{" C ||\u00e9t\u00e9 ", []int{3, 7}},
		{"tag with spaces", []int{5}},
		{"Z", nil},
	} {
		for _, mk := range []func(string) (*filter.TagFilter, error){filter.NewTagFilter, newExactTagFilter} {
			f, err := mk(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			g := get(t, s, "ft", 0, 0, 32, f)
			var idx []int
			for _, m := range g.msgs {
				var i int
				if _, err := fmt.Sscan(string(m.Body), &i); err != nil {
					t.Fatalf("body %q: %v", m.Body, err)
				}
				idx = append(idx, i)
				if c.expr != "*" && !strings.Contains(c.expr, m.Properties["TAGS"]) {
					t.Fatalf("%q matched tag %q", c.expr, m.Properties["TAGS"])
				}
			}
			if fmt.Sprint(idx) != fmt.Sprint(c.want) {
				t.Fatalf("filter %q: messages %v, want %v", c.expr, idx, c.want)
			}
			status := engine.Found
			if c.want == nil {
				status = engine.NoMatchedMessage
			}
			// Filtered units are consumed: next is past all of them.
			wantStatus(t, g, status, int64(len(tags)))
		}
	}
	// A filtered scan that stops at the count limit resumes correctly.
	f, _ := filter.NewTagFilter("A")
	g := get(t, s, "ft", 0, 0, 2, f)
	wantStatus(t, g, engine.Found, 5) // found 0 and 4; stopped before 5
	g = get(t, s, "ft", 0, g.next, 2, f)
	wantStatus(t, g, engine.Found, 9)
	if len(g.msgs) != 1 {
		t.Fatalf("resumed scan: %v", g)
	}
}

// newExactTagFilter builds the MatchExact filter of a subscription
// expression.
func newExactTagFilter(expr string) (*filter.TagFilter, error) {
	sd, err := filter.BuildSubscriptionData("", expr)
	if err != nil {
		return nil, err
	}
	return filter.NewSubscriptionFilter(sd, filter.MatchExact)
}
