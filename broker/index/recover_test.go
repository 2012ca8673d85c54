package index_test

import (
	"math"
	"slices"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
)

// records are (offset, timestamp) with one key each; the "CommitLog" for
// these tests is this list.
var records = func() [][2]int64 {
	var out [][2]int64
	for i := range int64(20) {
		out = append(out, [2]int64{100 * (i + 1), t0 + 1000*i})
	}
	return out
}()

func keyOf(i int) string { return "k" + string(rune('a'+i)) }

// TestRecoveryDeletesNewerFilesAndRebuilds: after an abnormal exit, files
// whose endTimestamp is after the checkpoint are deleted (without repair,
// or when the newest file cannot be repaired); records the
// engine replays before Reconcile are ignored (they may start after a
// gap); Reconcile names the first record to replay, and after the replay
// every key is found.
func TestRecoveryDeletesNewerFilesAndRebuilds(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	c := &cp{}
	s.SetCheckpoint(c)
	for i, r := range records[:15] { // 9 items per file: files 1 and 2
		put(t, s, req("T", r[0], r[1], keyOf(i), ""))
	}
	if len(s.Files()) != 2 || c.ts != records[8][1] {
		t.Fatalf("files %v, checkpoint %d", s.Files(), c.ts)
	}
	if err := s.Flush(); err != nil { // file 2 synced, but the checkpoint
		t.Fatal(err) // that would record it is never written: crash
	}
	s.Abandon()

	s = openWith(t, memfs.New(afs), false, records[8][1], index.WithoutRepair)
	defer s.Close()
	if n := len(s.Files()); n != 1 {
		t.Fatalf("%d files after recovery, want file 2 deleted", n)
	}
	// The engine replays from its own checkpoint, here record 12: ignored.
	for i := 12; i < 15; i++ {
		put(t, s, req("T", records[i][0], records[i][1], keyOf(i), ""))
	}
	from, err := s.Reconcile(0, records[15][0])
	if err != nil || from != records[8][0] {
		t.Fatalf("Reconcile = %d, %v; want the last durable entry %d", from, err, records[8][0])
	}
	for i := 8; i < 15; i++ {
		put(t, s, req("T", records[i][0], records[i][1], keyOf(i), ""))
	}
	for i := range 15 {
		if got := offsets(t, s, "T", keyOf(i), 64, 0, math.MaxInt64); !slices.Equal(got, []int64{records[i][0]}) {
			t.Fatalf("%s: %v", keyOf(i), got)
		}
	}
	if again, _ := s.Reconcile(0, records[15][0]); again != -1 {
		t.Fatal("second Reconcile asked for a replay")
	}
}

// After a clean exit nothing is deleted, ignored or replayed.
func TestRecoveryCleanExit(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	for i, r := range records[:12] {
		put(t, s, req("T", r[0], r[1], keyOf(i), ""))
	}
	s.Close()
	s = open(t, memfs.New(afs), true, 0)
	defer s.Close()
	if from, err := s.Reconcile(0, records[12][0]); from != -1 || err != nil || len(s.Files()) != 2 {
		t.Fatalf("%d %v %v", from, err, s.Files())
	}
	put(t, s, req("T", records[12][0], records[12][1], keyOf(12), ""))
	if got := offsets(t, s, "T", keyOf(12), 64, 0, math.MaxInt64); len(got) != 1 {
		t.Fatal(got)
	}
}

// An index synced past the recovered CommitLog end (its records were lost)
// must not make new records at those offsets look already indexed.
func TestRecoveryIndexAheadOfCommitLog(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	for i, r := range records[:5] {
		put(t, s, req("T", r[0], r[1], keyOf(i), ""))
	}
	s.Flush()
	s.Abandon()
	s = open(t, memfs.New(afs), false, records[4][1]) // kept: synced
	defer s.Close()
	clMax := records[2][0] // the CommitLog kept records 0 and 1 only
	// The entries past clMax are removed; the replay
	// starts at the newest entry left (harmless: it is skipped).
	if from, err := s.Reconcile(0, clMax); from != records[1][0] || err != nil {
		t.Fatalf("%d %v", from, err)
	}
	for i := 2; i < 5; i++ {
		if got := offsets(t, s, "T", keyOf(i), 64, 0, math.MaxInt64); len(got) != 0 {
			t.Fatalf("entry for lost record %d still found: %v", i, got)
		}
	}
	put(t, s, req("T", clMax, t0+99_000, "new", ""))
	if got := offsets(t, s, "T", "new", 64, 0, math.MaxInt64); !slices.Equal(got, []int64{clMax}) {
		t.Fatalf("new record at a reused offset not indexed: %v", got)
	}
	if got := offsets(t, s, "T", keyOf(0), 64, 0, math.MaxInt64); !slices.Equal(got, []int64{records[0][0]}) {
		t.Fatalf("old key lost: %v", got)
	}
}

// With every file deleted, the replay starts at the first deleted file's
// first record; with no index at all, at the first record the engine
// replayed.
func TestRecoveryAllDeleted(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	for i, r := range records[2:5] {
		put(t, s, req("T", r[0], r[1], keyOf(i+2), ""))
	}
	s.Flush()
	s.Abandon()
	s = openWith(t, memfs.New(afs), false, 0, index.WithoutRepair)
	if from, _ := s.Reconcile(0, records[10][0]); from != records[2][0] || len(s.Files()) != 0 {
		t.Fatalf("from %d, files %v", from, s.Files())
	}
	s.Close()

	s = open(t, memfs.New(afero.NewMemMapFs()), false, 0)
	defer s.Close()
	put(t, s, req("T", records[3][0], records[3][1], "x", ""))
	if from, _ := s.Reconcile(0, records[10][0]); from != records[3][0] {
		t.Fatalf("from %d", from)
	}
}

// TestRecoveryCleanExitTruncatedLog: after a clean exit too, recovery may cut the CommitLog
// (a torn tail); entries past the cut are removed with it, and the chains
// of the keys before it are intact.
func TestRecoveryCleanExitTruncatedLog(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	for i, r := range records[:5] {
		put(t, s, req("T", r[0], r[1], keyOf(i)+" shared", "")) // one chain through every record
	}
	s.Close()
	s = open(t, memfs.New(afs), true, 0)
	defer s.Close()
	clMax := records[3][0]
	if from, err := s.Reconcile(0, clMax); from != -1 || err != nil {
		t.Fatalf("%d %v", from, err)
	}
	for i := range 5 {
		got := offsets(t, s, "T", keyOf(i), 64, 0, math.MaxInt64)
		if want := i < 3; (len(got) == 1) != want {
			t.Fatalf("key %d: %v (kept %v)", i, got, want)
		}
	}
	if got := offsets(t, s, "T", "shared", 64, 0, math.MaxInt64); len(got) != 3 {
		t.Fatalf("shared key after truncation: %v, want the 3 records kept", got)
	}
}
