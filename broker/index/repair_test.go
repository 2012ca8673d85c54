package index_test

import (
	"math"
	"slices"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
)

// itemAt is the byte position of item i in a test file (slots slots).
func itemAt(i int) int64 { return 40 + slots*4 + int64(i)*20 }

// TestRecoveryRepairsNewestFile: after an abnormal exit the newest index
// file, newer than the checkpoint, is kept up to its first damaged item
// instead of deleted, and Reconcile replays the CommitLog from its last
// item kept, not from the file's start: restart work in proportion to
// what the crash damaged, not to the store. Every key is then found
// exactly once. The broken variant (WithoutRepair) deletes the file and
// asks for a replay from its first record.
func TestRecoveryRepairsNewestFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage int // item of file 2 zeroed in the durable image (0: none)
		kept   int // records of file 2 kept
	}{
		{"synced, checkpoint not written", 0, 6},
		{"a torn item in the middle", 3, 2},
		{"the first item torn", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, repair := range []bool{true, false} {
				afs := afero.NewMemMapFs()
				s := open(t, memfs.New(afs), true, 0)
				for i, r := range records[:15] { // 9 items per file: files 1 and 2
					put(t, s, req("T", r[0], r[1], keyOf(i), ""))
				}
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				files := s.Files()
				s.Abandon()
				if tc.damage > 0 {
					f, err := afs.OpenFile(files[1], 2, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.WriteAt(make([]byte, 20), itemAt(tc.damage)); err != nil {
						t.Fatal(err)
					}
					f.Close()
				}
				mod := func(c index.Config) index.Config { return c }
				if !repair {
					mod = index.WithoutRepair
				}
				s = openWith(t, memfs.New(afs), false, records[8][1], mod)
				// File 2 holds records 9..14; the last record kept is
				// 8 (file 1's last) when file 2 keeps nothing.
				last := 9 + tc.kept - 1
				want := records[last][0]
				if !repair {
					want = records[8][0] // file 2 deleted: from file 1's last item
				}
				from, err := s.Reconcile(0, records[15][0])
				if err != nil || from != want {
					s.Close()
					t.Fatalf("repair %v: Reconcile = %d, %v; want %d", repair, from, err, want)
				}
				for i := 8; i < 15; i++ {
					if records[i][0] >= from {
						put(t, s, req("T", records[i][0], records[i][1], keyOf(i), ""))
					}
				}
				for i := range 15 {
					if got := offsets(t, s, "T", keyOf(i), 64, 0, math.MaxInt64); !slices.Equal(got, []int64{records[i][0]}) {
						s.Close()
						t.Fatalf("repair %v: %s: %v, want [%d]", repair, keyOf(i), got, records[i][0])
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
