package index_test

import (
	"encoding/binary"
	"io"
	"log/slog"
	"math"
	"path"
	"slices"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/dispatch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var be = binary.BigEndian

// javaHash is String.hashCode, written from the Java definition rather
// than taken from the package: s[0]*31^(n-1) + ... over UTF-16 units.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// keyHash is IndexFile.indexKeyHashMethod.
func keyHash(s string) int32 {
	h := javaHash(s)
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

type cp struct{ ts int64 }

func (c *cp) SetIndex(ts int64) { c.ts = ts }

const slots, items = 8, 10

func open(t *testing.T, fs backend.FS, lastExitOK bool, cpTs int64) *index.Service {
	t.Helper()
	return openWith(t, fs, lastExitOK, cpTs, func(c index.Config) index.Config { return c })
}

func openWith(t *testing.T, fs backend.FS, lastExitOK bool, cpTs int64, mod func(index.Config) index.Config) *index.Service {
	t.Helper()
	s, err := index.Open(fs, mod(index.Config{MaxHashSlotNum: slots, MaxIndexNum: items, Clock: clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), lastExitOK, cpTs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func req(topic string, off, ts int64, keys, uniq string) *dispatch.Request {
	return &dispatch.Request{Topic: []byte(topic), CommitLogOffset: off, StoreTimestamp: ts, Keys: []byte(keys), UniqKey: []byte(uniq)}
}

func put(t *testing.T, s *index.Service, r *dispatch.Request) {
	t.Helper()
	if err := s.Dispatch(r); err != nil {
		t.Fatal(err)
	}
}

const t0 = 1_700_000_000_000

// TestFileLayout checks the bytes of an index file against the spec
// (section 5): header fields, slot heads, item fields and chaining.
func TestFileLayout(t *testing.T) {
	afs := afero.NewMemMapFs()
	fs := memfs.New(afs)
	s := open(t, fs, true, 0)
	put(t, s, req("T", 100, t0, "a", ""))        // item 1
	put(t, s, req("T", 200, t0+2500, "b a", "")) // items 2 (b), 3 (a)
	files := s.Files()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || path.Dir(files[0]) != index.Dir || len(path.Base(files[0])) != 17 {
		t.Fatalf("files %v", files)
	}
	data, err := afero.ReadFile(afs, files[0]) // the durable image
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 40+slots*4+items*20 {
		t.Fatalf("size %d", len(data))
	}
	hdr := struct{ beginTs, endTs, beginPhy, endPhy int64 }{
		int64(be.Uint64(data[0:])), int64(be.Uint64(data[8:])), int64(be.Uint64(data[16:])), int64(be.Uint64(data[24:]))}
	if hdr.beginTs != t0 || hdr.endTs != t0+2500 || hdr.beginPhy != 100 || hdr.endPhy != 200 {
		t.Fatalf("header %+v", hdr)
	}
	ka, kb := "T#a", "T#b"
	wantSlots := 2
	if keyHash(ka)%slots == keyHash(kb)%slots {
		wantSlots = 1
	}
	if got := int32(be.Uint32(data[32:])); got != int32(wantSlots) {
		t.Fatalf("hashSlotCount %d, want %d", got, wantSlots)
	}
	if got := int32(be.Uint32(data[36:])); got != 4 {
		t.Fatalf("indexCount %d, want 4 (starts at 1)", got)
	}
	slot := func(key string) int32 { return int32(be.Uint32(data[40+4*(keyHash(key)%slots):])) }
	type item struct {
		hash     int32
		phy      int64
		timeDiff int32
		prev     int32
	}
	itemAt := func(i int32) item {
		b := data[40+slots*4+20*int(i):]
		return item{int32(be.Uint32(b)), int64(be.Uint64(b[4:])), int32(be.Uint32(b[12:])), int32(be.Uint32(b[16:]))}
	}
	if slot(ka) != 3 {
		t.Fatalf("slot of %s = %d, want 3 (the newest item)", ka, slot(ka))
	}
	if got := itemAt(3); got != (item{keyHash(ka), 200, 2, 1}) {
		t.Fatalf("item 3 %+v", got)
	}
	if got := itemAt(1); got != (item{keyHash(ka), 100, 0, 0}) {
		t.Fatalf("item 1 %+v", got)
	}
	wantPrev := int32(0)
	if wantSlots == 1 {
		wantPrev = 1
	}
	if got := itemAt(2); got != (item{keyHash(kb), 200, 2, wantPrev}) {
		t.Fatalf("item 2 %+v", got)
	}
	if itemAt(0) != (item{}) {
		t.Fatal("item 0 is used")
	}
}

func offsets(t *testing.T, s *index.Service, topic, key string, max int, begin, end int64) []int64 {
	t.Helper()
	r, err := s.QueryOffset(topic, key, max, begin, end)
	if err != nil {
		t.Fatal(err)
	}
	return r.PhyOffsets
}

func TestQuery(t *testing.T) {
	s := open(t, memfs.New(nil), true, 0)
	defer s.Close()
	for i := range int64(9) {
		put(t, s, req("T", 100*(i+1), t0+1000*i, "k common", "U"+string(rune('0'+i))))
	}
	// 9 records × 3 keys = 27 items: files of 9 usable items roll.
	if n := len(s.Files()); n != 3 {
		t.Fatalf("%d files", n)
	}
	if got := offsets(t, s, "T", "k", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{900, 800, 700, 600, 500, 400, 300, 200, 100}) {
		t.Fatalf("k: %v (newest first, across files)", got)
	}
	if got := offsets(t, s, "T", "U3", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{400}) {
		t.Fatalf("U3: %v", got)
	}
	if got := offsets(t, s, "T", "k", 3, 0, math.MaxInt64); !slices.Equal(got, []int64{900, 800, 700}) {
		t.Fatalf("maxNum 3: %v", got)
	}
	if got := offsets(t, s, "T", "k", 64, t0+2000, t0+4000); !slices.Equal(got, []int64{500, 400, 300}) {
		t.Fatalf("time range: %v", got)
	}
	if got := offsets(t, s, "U", "k", 64, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("other topic: %v", got)
	}
	if got := offsets(t, s, "T", "none", 64, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("absent key: %v", got)
	}
	if got := offsets(t, s, "T", "k", 0, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("maxNum 0: %v", got)
	}
	r, _ := s.QueryOffset("T", "k", 1, 0, math.MaxInt64)
	if r.IndexLastUpdatePhyOffset != 900 || r.IndexLastUpdateTimestamp != t0+8000 {
		t.Fatalf("%+v", r)
	}
}

func TestMaxNum64(t *testing.T) {
	s, err := index.Open(memfs.New(nil), index.Config{MaxHashSlotNum: 4, MaxIndexNum: 200}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range int64(100) {
		put(t, s, req("T", i+1, t0, "k", ""))
	}
	if got := offsets(t, s, "T", "k", 1000, 0, math.MaxInt64); len(got) != 64 || got[0] != 100 {
		t.Fatalf("%d results, first %v", len(got), got[:1])
	}
}

// Keys whose hashes share a slot chain through it; keys with an equal
// hash are returned together (RocketMQ does not re-check the key).
func TestHashCollisions(t *testing.T) {
	s := open(t, memfs.New(nil), true, 0)
	defer s.Close()
	// "Aa" and "BB" have the same Java hash.
	if javaHash("T#Aa") != javaHash("T#BB") {
		t.Fatal("test keys do not collide")
	}
	// Find a key in the same slot as T#x with another hash.
	other := ""
	for c := 'a'; c <= 'z' && other == ""; c++ {
		for d := 'a'; d <= 'z'; d++ {
			k := string([]rune{c, d})
			if keyHash("T#"+k)%slots == keyHash("T#x")%slots && keyHash("T#"+k) != keyHash("T#x") {
				other = k
				break
			}
		}
	}
	put(t, s, req("T", 10, t0, "x", ""))
	put(t, s, req("T", 20, t0, other, ""))
	put(t, s, req("T", 30, t0, "Aa", ""))
	put(t, s, req("T", 40, t0, "BB", ""))
	if got := offsets(t, s, "T", "x", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{10}) {
		t.Fatalf("x: %v", got)
	}
	if got := offsets(t, s, "T", other, 64, 0, math.MaxInt64); !slices.Equal(got, []int64{20}) {
		t.Fatalf("%s: %v", other, got)
	}
	if got := offsets(t, s, "T", "Aa", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{40, 30}) {
		t.Fatalf("Aa: %v", got)
	}
}

func TestSkipsIndexedAndRollback(t *testing.T) {
	s := open(t, memfs.New(nil), true, 0)
	defer s.Close()
	put(t, s, req("T", 100, t0, "k", ""))
	put(t, s, req("T", 100, t0, "k", "")) // replayed: skipped
	put(t, s, req("T", 50, t0, "k", ""))  // below the newest entry: skipped
	rb := req("T", 200, t0, "k", "")
	rb.SysFlag = 0xC // rollback
	put(t, s, rb)
	put(t, s, req("T", 300, t0, "", "")) // no key
	if got := offsets(t, s, "T", "k", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{100}) {
		t.Fatalf("%v", got)
	}
}

// The checkpoint learns a file's end timestamp only once it is synced.
func TestCheckpointAfterSync(t *testing.T) {
	s := open(t, memfs.New(nil), true, 0)
	c := &cp{}
	s.SetCheckpoint(c)
	put(t, s, req("T", 100, t0, "k", ""))
	if c.ts != 0 {
		t.Fatal("checkpoint set before a sync")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if c.ts != t0 {
		t.Fatalf("checkpoint %d", c.ts)
	}
	for i := range int64(10) { // roll: the full file is synced
		put(t, s, req("T", 200+i, t0+5+i, "k", ""))
	}
	// The first file holds items 1..9: the first put and i = 0..7.
	if c.ts != t0+5+7 {
		t.Fatalf("checkpoint %d after a roll", c.ts)
	}
	s.Close()
	if _, err := s.QueryOffset("T", "k", 1, 0, 1); err != index.ErrClosed {
		t.Fatal(err)
	}
	if err := s.Dispatch(req("T", 999, t0, "k", "")); err != index.ErrClosed {
		t.Fatal(err)
	}
}
