package verify_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/verify"
)

// put is one stored message of the fixture.
type put struct {
	topic       string
	qid         int32
	queueOffset int64
	offset      int64
	size        int32
}

// fixture sizes: tiny files, so that the CommitLog rolls (BLANK records)
// and the ConsumeQueues span several files.
var fixtureConfig = engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 8}

// writeStore fills a store on fs with plain, tagged, delayed, batched and
// transactional messages, closes it cleanly and returns the dispatchable
// puts.
func writeStore(t *testing.T, fs backend.FS) []put {
	t.Helper()
	s, err := engine.Open(fs, fixtureConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var puts []put
	add := func(res engine.PutResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		size := res.WroteBytes / res.MsgNum // batches hold equal-sized messages
		for i := range int64(res.MsgNum) {
			puts = append(puts, put{res.Topic, res.QueueID, res.QueueOffset + i, res.WroteOffset + i*int64(size), size})
		}
	}
	tags := []string{"TagA", "TagB", "TagC"}
	for i := range 60 {
		topic := fmt.Sprintf("topic%d", i%3)
		add(s.Put(ctx, &engine.Message{Topic: topic, QueueID: int32(i % 2), Body: fmt.Appendf(nil, "body %04d", i),
			Properties: map[string]string{"TAGS": tags[(i/6)%3], "KEYS": fmt.Sprintf("k%d", i)}}))
	}
	add(s.Put(ctx, &engine.Message{Topic: "delayed", Body: []byte("later"),
		Properties: map[string]string{"DELAY": "3", "TAGS": "TagA"}}))
	var batch []*engine.Message
	for i := range 4 {
		batch = append(batch, &engine.Message{Topic: "batch", QueueID: 1, Body: fmt.Appendf(nil, "batch %d", i)})
	}
	add(s.PutBatch(ctx, batch))
	// A prepared transaction message is stored but never dispatched.
	if _, err := s.Put(ctx, &engine.Message{Topic: "topic0", Body: []byte("half"), SysFlag: record.TransactionPrepared}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return puts
}

func run(t *testing.T, fs backend.FS) verify.Report {
	t.Helper()
	rep, err := verify.Run(fs, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mmapStore(t *testing.T) (string, []put) {
	t.Helper()
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, writeStore(t, fs)
}

func mustFS(t *testing.T, dir string) backend.FS {
	t.Helper()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestCleanStore(t *testing.T) {
	for name, fs := range map[string]func(t *testing.T) (backend.FS, []put){
		"mmap": func(t *testing.T) (backend.FS, []put) {
			dir, puts := mmapStore(t)
			return mustFS(t, dir), puts
		},
		"memfs": func(t *testing.T) (backend.FS, []put) {
			fs := memfs.New(nil)
			puts := writeStore(t, fs)
			// A new FS on the same files sees only what was synced.
			return memfs.New(fs.Afero()), puts
		},
	} {
		t.Run(name, func(t *testing.T) {
			fs, puts := fs(t)
			var calls, last, total int64
			rep, err := verify.Run(fs, verify.Options{Progress: func(done, tot int64) {
				if done < last {
					t.Errorf("progress went back from %d to %d", last, done)
				}
				calls, last, total = calls+1, done, tot
			}})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range rep.Violations {
				t.Error(v)
			}
			if rep.Dispatchable != int64(len(puts)) || rep.Records != int64(len(puts))+1 || rep.Units != int64(len(puts)) {
				t.Errorf("records %d dispatchable %d units %d, want %d+1, %d, %d",
					rep.Records, rep.Dispatchable, rep.Units, len(puts), len(puts), len(puts))
			}
			// One blank ends each full file; the store may also leave the
			// next file, pre-created by its allocator and still empty.
			if rep.Blanks < 1 || rep.CommitLogFiles < rep.Blanks+1 || rep.CommitLogFiles > rep.Blanks+2 {
				t.Errorf("%d files and %d blanks: the fixture should roll files", rep.CommitLogFiles, rep.Blanks)
			}
			if calls == 0 || last != total || total == 0 {
				t.Errorf("progress: %d calls, last %d of %d", calls, last, total)
			}
			if !rep.Checkpoint.Present || rep.Unclean {
				t.Errorf("checkpoint %+v, unclean %v", rep.Checkpoint, rep.Unclean)
			}
			t.Log("\n" + rep.Summary())
		})
	}
}

// damage is one way to break a copy of the fixture store.
type damage struct {
	name   string
	damage func(t *testing.T, dir string, puts []put)
	// want are the kinds that must be reported, with exact counts; -1
	// means at least one.
	want map[verify.Kind]int
	// at says where the first violation of a kind must be reported (file
	// relative to the store root, byte offset); nil skips the check.
	at func(puts []put) (verify.Kind, string, int64)
}

func TestDamagedStores(t *testing.T) {
	cases := []damage{
		{
			name: "flipped body byte",
			damage: func(t *testing.T, dir string, puts []put) {
				p := puts[10]
				flip(t, dir, clFile(p.offset), clPos(p.offset)+88)
			},
			want: map[verify.Kind]int{verify.KindCRC: 1},
			at: func(puts []put) (verify.Kind, string, int64) {
				return verify.KindCRC, clFile(puts[10].offset), clPos(puts[10].offset)
			},
		},
		{
			name: "flipped magic byte",
			damage: func(t *testing.T, dir string, puts []put) {
				flip(t, dir, clFile(puts[3].offset), clPos(puts[3].offset)+5)
			},
			// The scan resyncs at the next intact record, as recovery
			// does: the damage is the only violation.
			want: map[verify.Kind]int{verify.KindRecord: 1},
			at: func(puts []put) (verify.Kind, string, int64) {
				return verify.KindRecord, clFile(puts[3].offset), clPos(puts[3].offset)
			},
		},
		{
			name: "stale physical offset",
			damage: func(t *testing.T, dir string, puts []put) {
				p := puts[7]
				writeAt(t, dir, clFile(p.offset), clPos(p.offset)+28, be64(p.offset+4096))
			},
			want: map[verify.Kind]int{verify.KindPhysicalOffset: 1},
			at: func(puts []put) (verify.Kind, string, int64) {
				return verify.KindPhysicalOffset, clFile(puts[7].offset), clPos(puts[7].offset)
			},
		},
		{
			name: "consume queue unit pointing at another queue's record",
			damage: func(t *testing.T, dir string, puts []put) {
				p, other := puts[0], puts[1] // topic0/0 and topic1/1
				writeAt(t, dir, cqFile(p), cqPos(p), be64(other.offset))
			},
			want: map[verify.Kind]int{verify.KindUnit: 1, verify.KindMissing: 1},
			at:   func(puts []put) (verify.Kind, string, int64) { return verify.KindUnit, cqFile(puts[0]), cqPos(puts[0]) },
		},
		{
			name: "duplicate consume queue unit",
			damage: func(t *testing.T, dir string, puts []put) {
				// puts 0 and 6 are topic0/0 queue offsets 0 and 1, with
				// the same tag and size: unit 0 becomes a copy of unit 1.
				writeAt(t, dir, cqFile(puts[0]), cqPos(puts[0]), readAt(t, dir, cqFile(puts[6]), cqPos(puts[6]), 20))
			},
			want: map[verify.Kind]int{verify.KindDuplicate: 1, verify.KindMissing: 1},
			at: func(puts []put) (verify.Kind, string, int64) {
				return verify.KindDuplicate, cqFile(puts[0]), cqPos(puts[0])
			},
		},
		{
			name: "missing last consume queue entry",
			damage: func(t *testing.T, dir string, puts []put) {
				writeAt(t, dir, cqFile(lastOf(puts, "topic2", 1)), cqPos(lastOf(puts, "topic2", 1)), make([]byte, 20))
			},
			want: map[verify.Kind]int{verify.KindMissing: 1},
			at: func(puts []put) (verify.Kind, string, int64) {
				p := lastOf(puts, "topic2", 1)
				return verify.KindMissing, clFile(p.offset), clPos(p.offset)
			},
		},
		{
			name: "zeroed unit in the middle of a queue",
			damage: func(t *testing.T, dir string, puts []put) {
				writeAt(t, dir, cqFile(puts[2]), cqPos(puts[2]), make([]byte, 20))
			},
			want: map[verify.Kind]int{verify.KindGap: -1, verify.KindMissing: -1},
		},
		{
			name: "missing consume queue directory",
			damage: func(t *testing.T, dir string, puts []put) {
				if err := os.RemoveAll(filepath.Join(dir, "consumequeue", "batch")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[verify.Kind]int{verify.KindMissing: 4},
		},
		{
			name: "garbage after the last record",
			damage: func(t *testing.T, dir string, puts []put) {
				end := lastEnd(t, dir)
				writeAt(t, dir, clFile(end), clPos(end)+8, []byte{1, 2, 3})
			},
			want: map[verify.Kind]int{verify.KindTail: 1},
		},
		{
			name: "blank record in the middle of a file",
			damage: func(t *testing.T, dir string, puts []put) {
				end := lastEnd(t, dir)
				writeAt(t, dir, clFile(end), clPos(end), append(be32(16), be32(0xCBD43194)...))
			},
			want: map[verify.Kind]int{verify.KindBlank: 1},
		},
		{
			name: "truncated commitlog file",
			damage: func(t *testing.T, dir string, puts []put) {
				if err := os.Truncate(filepath.Join(dir, clFile(0)), 2048); err != nil {
					t.Fatal(err)
				}
			},
			want: map[verify.Kind]int{verify.KindLayout: 1, verify.KindUnit: -1},
			at:   func([]put) (verify.Kind, string, int64) { return verify.KindLayout, clFile(0), 0 },
		},
		{
			name: "checkpoint ahead of the commitlog",
			damage: func(t *testing.T, dir string, puts []put) {
				writeAt(t, dir, "checkpoint", 0, be64(time.Now().Add(time.Hour).UnixMilli()))
			},
			want: map[verify.Kind]int{verify.KindCheckpoint: 1},
			at:   func([]put) (verify.Kind, string, int64) { return verify.KindCheckpoint, "checkpoint", 0 },
		},
		{
			name: "negative checkpoint",
			damage: func(t *testing.T, dir string, puts []put) {
				writeAt(t, dir, "checkpoint", 8, be64(-5))
			},
			want: map[verify.Kind]int{verify.KindCheckpoint: 1},
			at:   func([]put) (verify.Kind, string, int64) { return verify.KindCheckpoint, "checkpoint", 8 },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, puts := mmapStore(t)
			tc.damage(t, dir, puts)
			rep := run(t, mustFS(t, dir))
			checkKinds(t, rep, tc.want)
			if tc.at != nil && !t.Failed() {
				k, file, off := tc.at(puts)
				checkFirstAt(t, rep, k, file, off)
			}
		})
	}
}

func checkKinds(t *testing.T, rep verify.Report, want map[verify.Kind]int) {
	t.Helper()
	for k, n := range want {
		if got := rep.Count(k); (n < 0 && got == 0) || (n >= 0 && got != n) {
			t.Errorf("%d %s violations, want %d", got, k, n)
		}
	}
	for _, v := range rep.Violations {
		if _, ok := want[v.Kind]; !ok {
			t.Errorf("unexpected violation %s", v)
		}
	}
	if t.Failed() {
		for _, v := range rep.Violations {
			t.Log(v)
		}
	}
}

// checkFirstAt checks where the first violation of kind k was reported.
func checkFirstAt(t *testing.T, rep verify.Report, k verify.Kind, file string, off int64) {
	t.Helper()
	for _, v := range rep.Violations {
		if v.Kind != k {
			continue
		}
		if v.File != filepath.ToSlash(file) || v.Offset != off {
			t.Errorf("%s reported at %s@%d, want %s@%d", k, v.File, v.Offset, file, off)
		}
		return
	}
}

func TestNotAStore(t *testing.T) {
	if _, err := verify.Run(mustFS(t, t.TempDir()), verify.Options{}); err != verify.ErrNotStore {
		t.Fatalf("err %v, want ErrNotStore", err)
	}
}

func TestStoreInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(mustFS(t, dir), fixtureConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := verify.Run(mustFS(t, dir), verify.Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("err %v, want ErrInUse", err)
	}
}

// Helpers that locate things in the fixture (file size 4096, 8 units per
// consume queue file).

func clFile(off int64) string { return filepath.Join("commitlog", fmt.Sprintf("%020d", off-off%4096)) }
func clPos(off int64) int64   { return off % 4096 }

func cqFile(p put) string {
	b := p.queueOffset * 20
	return filepath.Join("consumequeue", p.topic, fmt.Sprint(p.qid), fmt.Sprintf("%020d", b-b%160))
}
func cqPos(p put) int64 { return p.queueOffset * 20 % 160 }

func lastOf(puts []put, topic string, qid int32) put {
	var last put
	for _, p := range puts {
		if p.topic == topic && p.qid == qid {
			last = p
		}
	}
	return last
}

// lastEnd returns the CommitLog offset after the last record.
func lastEnd(t *testing.T, dir string) int64 {
	t.Helper()
	rep := run(t, mustFS(t, dir))
	return rep.MaxOffset
}

func readAt(t *testing.T, dir, name string, off int64, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b[off:off+int64(n)]...)
}

func writeAt(t *testing.T, dir, name string, off int64, p []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, dir, name string, off int64) {
	t.Helper()
	b := readAt(t, dir, name, off, 1)
	b[0] ^= 0x40
	writeAt(t, dir, name, off, b)
}

func be64(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// TestRandomDamageNeverPanics flips random bytes anywhere in the store's
// files: Run must report, never panic or fail to read.
func TestRandomDamageNeverPanics(t *testing.T) {
	dir, _ := mmapStore(t)
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != "lock" && d.Name() != "abort" {
			files = append(files, p)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		name := files[rng.IntN(len(files))]
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := verify.Run(mustFS(t, dir), verify.Options{MaxViolations: 10}); err != nil {
			t.Fatalf("damage %d: %v", i, err)
		}
	}
}

// TestResyncPastDamagedRecord: a damaged record header early in a large
// CommitLog file is one violation. The scan used to stop at it ("the rest
// of the file is not checked") and report every unit after it as pointing
// at data it could not check: hundreds of false violations.
func TestResyncPastDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(mustFS(t, dir), engine.Config{CommitLogFileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var victim engine.PutResult
	for i := range 2000 {
		res, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: int32(i % 4), Body: fmt.Appendf(nil, "body %04d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			victim = res
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flip(t, dir, "commitlog/00000000000000000000", victim.WroteOffset+5) // its magic code
	rep := run(t, mustFS(t, dir))
	t.Logf("%d violations", rep.ViolationCount)
	checkKinds(t, rep, map[verify.Kind]int{verify.KindRecord: 1})
	checkFirstAt(t, rep, verify.KindRecord, "commitlog/00000000000000000000", victim.WroteOffset)
	for _, v := range rep.Violations {
		if s := v.String(); strings.Contains(s, "record: record:") {
			t.Errorf("violation %q names its kind twice", s)
		}
	}
	if rep.Records != 1999 {
		t.Errorf("%d records checked, want the 1999 intact ones", rep.Records)
	}
}
