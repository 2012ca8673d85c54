package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// TestVerifyChecksTheIndex: verify reads the IndexFiles
// and reports entries past the CommitLog end or not at a record start.
func TestVerifyChecksTheIndex(t *testing.T) {
	fs := memfs.New(nil)
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16}))
	if err != nil {
		t.Fatal(err)
	}
	var puts []engine.PutResult
	for range 3 {
		r, err := s.Put(context.Background(), &engine.Message{Topic: "t", Body: []byte("body")})
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(fs, index.Config{MaxHashSlotNum: 100, MaxIndexNum: 400}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := puts[2].WroteOffset + int64(puts[2].WroteBytes)
	for i, off := range []int64{puts[0].WroteOffset, puts[1].WroteOffset, puts[1].WroteOffset + 3, end} {
		if err := ix.Dispatch(&dispatch.Request{Topic: []byte("t"), CommitLogOffset: off, StoreTimestamp: 1_700_000_000_000 + int64(i),
			Keys: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(fs, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(verify.KindIndex) != 2 {
		t.Fatalf("%d index violations, want 2 (past the end, not a record start):\n%s", rep.Count(verify.KindIndex), rep.Summary())
	}
	var all []string
	for _, v := range rep.Violations {
		all = append(all, v.String())
	}
	got := strings.Join(all, "\n")
	if !strings.Contains(got, "at or past the commitlog end") || !strings.Contains(got, "where no record starts") {
		t.Fatalf("violations:\n%s", got)
	}
}
