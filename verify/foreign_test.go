package verify_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestForeignFilesIgnored: files whose names the store never writes, in
// the CommitLog, a ConsumeQueue and the index directory, are listed as
// ignored and are no violation, whatever they hold (here a second name of
// a segment, as FUSE's .fuse_hidden* is after a crash, and an empty file).
func TestForeignFilesIgnored(t *testing.T) {
	dir, puts := mmapStore(t)
	seg, err := os.ReadFile(filepath.Join(dir, "commitlog", "00000000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	strays := map[string][]byte{
		"commitlog/.fuse_hidden0000000a00000001":     seg,
		"consumequeue/topic0/0/.nfs0000000000001234": nil,
		"index/.fuse_hidden0000000b00000002":         nil,
	}
	for name, b := range strays {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, mustFS(t, dir))
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.Units != int64(len(puts)) {
		t.Errorf("units %d, want %d", rep.Units, len(puts))
	}
	for name := range strays {
		if !slices.Contains(rep.Ignored, name) {
			t.Errorf("%s not in the ignored list %v", name, rep.Ignored)
		}
	}
	if len(rep.Ignored) != len(strays) {
		t.Errorf("ignored %v, want exactly %d files", rep.Ignored, len(strays))
	}
}
