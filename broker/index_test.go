package broker_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/internal/brokerops"
)

func TestQueryMessageByKeyAfterRestart(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	createTopic(t, b, "T", 1)
	for i := 0; i < 40; i++ { // > 31 items: rolls index files
		m := msg("T", 0, "A", fmt.Sprintf("k%d common", i))
		m.Properties["UNIQ_KEY"] = fmt.Sprintf("U%d", i)
		put(t, b, m)
	}
	check := func(label string) {
		r, err := b.QueryMessage("T", "k7", 10, 0, math.MaxInt64)
		if err != nil || len(r.Messages) != 1 || r.Messages[0].Properties["UNIQ_KEY"] != "U7" {
			t.Fatalf("%s: k7: %+v %v", label, r, err)
		}
		r, _ = b.QueryMessage("T", "U39", 10, 0, math.MaxInt64)
		if len(r.Messages) != 1 {
			t.Fatalf("%s: U39: %d", label, len(r.Messages))
		}
		r, _ = b.QueryMessage("T", "common", 100, 0, math.MaxInt64)
		if len(r.Messages) != 40 {
			t.Fatalf("%s: common: %d messages", label, len(r.Messages))
		}
		r, _ = b.QueryMessage("other", "k7", 10, 0, math.MaxInt64)
		if len(r.Messages) != 0 {
			t.Fatalf("%s: other topic matched", label)
		}
	}
	check("before restart")
	if len(b.Index().Files()) < 2 {
		t.Fatalf("files %v", b.Index().Files())
	}
	b.Close()
	b = open(t, fs, testConfig())
	check("after restart")
	b.Close()
}

// TestQueryByKeyAfterPowerCut: after an abnormal start, index files newer
// than the checkpoint are deleted and the gap is re-indexed from the
// CommitLog, so every durable message is found by key.
func TestQueryByKeyAfterPowerCut(t *testing.T) {
	afs := afero.NewMemMapFs()
	b := open(t, memfs.New(afs), testConfig())
	createTopic(t, b, "T", 1)
	for i := 0; i < 40; i++ { // rolls index files; some synced, some not
		put(t, b, msg("T", 0, "A", fmt.Sprintf("k%d", i)))
		if i == 20 {
			if err := b.Store().Checkpoint().Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Store().FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	brokerops.Abandon(b)
	b = open(t, memfs.New(afs), testConfig())
	defer b.Close()
	for i := 0; i < 40; i++ {
		r, err := b.QueryMessage("T", fmt.Sprintf("k%d", i), 10, 0, math.MaxInt64)
		if err != nil || len(r.Messages) != 1 {
			t.Fatalf("k%d: %v %v", i, r, err)
		}
	}
	// New messages are indexed after the recovery.
	put(t, b, msg("T", 0, "A", "fresh"))
	if r, _ := b.QueryMessage("T", "fresh", 10, 0, math.MaxInt64); len(r.Messages) != 1 {
		t.Fatal("new message not indexed")
	}
}
