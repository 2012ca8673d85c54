package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestOwnSnapshotEndCountsInstalledReceived: the commit point a store of
// replicated records opens with is its own newest snapshot's end, or a
// received snapshot's end once that snapshot's data is gone (reap removes
// it only after the install synced the CommitLog up to it), never a
// received snapshot whose data is still there (its install may not have
// run).
func TestOwnSnapshotEndCountsInstalledReceived(t *testing.T) {
	dir := t.TempDir()
	s, err := newSnapStore(filepath.Join(dir, "raft", "snapshots"), nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string, index uint64, from, to int64, data bool) {
		b, err := json.Marshal(snapMeta{Meta: raft.SnapshotMeta{ID: id, Index: index, Term: 1}, Header: snapHeader{From: from, To: to}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.path(id, ".meta"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if data {
			if err := os.WriteFile(s.path(id, ".data"), []byte("stream"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(want int64) {
		t.Helper()
		if got, err := ownSnapshotEnd(dir); err != nil || got != want {
			t.Fatalf("ownSnapshotEnd %d, %v; want %d", got, err, want)
		}
	}
	put("1-10-1", 10, 1000, 1000, false) // taken here
	put("1-20-2", 20, 0, 5000, true)     // received, data kept
	check(1000)
	if err := os.Remove(s.path("1-20-2", ".data")); err != nil {
		t.Fatal(err)
	}
	check(5000)
}
