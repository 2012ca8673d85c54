package broker_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/verify"
)

// TestGarbageIndexRebuilt: an index file holding garbage is found when the
// broker opens, logged at ERROR, and the index is rebuilt from the
// CommitLog: every key is found again, and after the broker ran the
// offline checker finds nothing wrong with the index. The garbage used to
// be kept: verify reported it after any number of runs. Garbage in the
// hash slots alone (the header and items intact) hid the keys of those
// slots' chains, and neither verify nor the broker saw it.
func TestGarbageIndexRebuilt(t *testing.T) {
	for _, c := range []struct {
		name     string
		at, size int64
	}{
		{"header and hash slots", 0, 200},
		{"hash slots", 40, 16 * 4},
	} {
		t.Run(c.name, func(t *testing.T) { garbageIndexRebuilt(t, c.at, c.size) })
	}
}

func garbageIndexRebuilt(t *testing.T, at, size int64) {
	fs := memfs.New(nil)
	cfg := testConfig()
	// RocketMQ's ratio of items to slots, which verify checks.
	cfg.Index = index.Config{MaxHashSlotNum: 16, MaxIndexNum: 64}
	b := open(t, fs, cfg)
	createTopic(t, b, "T", 1)
	for i := range 100 { // > 63 items: two index files
		put(t, b, msg("T", 0, "A", fmt.Sprintf("k%d", i)))
	}
	files := b.Index().Files()
	if len(files) < 2 {
		t.Fatalf("index files %v, want at least 2", files)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	f, err := fs.Afero().OpenFile(files[0], 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(garbage, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := indexViolations(t, fs.Afero()); n == 0 {
		t.Fatal("verify finds nothing wrong with the garbage index file: the test proves nothing")
	}

	var logs bytes.Buffer
	cfg.Store.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b = open(t, fs, cfg)
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "index") {
		t.Errorf("no ERROR about the index:\n%s", logs.String())
	}
	for _, k := range []string{"k0", "k5", "k70", "k99"} {
		r, err := b.QueryMessage("T", k, 10, 0, math.MaxInt64)
		if err != nil || len(r.Messages) != 1 {
			t.Errorf("query %s after the rebuild: %v, %+v", k, err, r)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := indexViolations(t, fs.Afero()); n != 0 {
		t.Fatalf("after the broker ran, verify still reports %d index violations", n)
	}
}

// indexViolations runs the offline checker and counts what it reports
// about the index.
func indexViolations(t *testing.T, afs afero.Fs) int {
	t.Helper()
	rep, err := verify.Run(memfs.New(afs), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Kind != verify.KindIndex {
			t.Errorf("verify: %v", v)
		}
	}
	return rep.Count(verify.KindIndex)
}
