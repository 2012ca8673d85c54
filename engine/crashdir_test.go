package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// MarkCrashedKeepingCommitLog makes the closed store in dir look crashed
// with nothing to trust but the CommitLog: it removes the ConsumeQueues
// and the checkpoint and leaves the abort file, so the next Open runs an
// abnormal recovery that CRC-checks and re-dispatches every record.
// Exported for the engine_test package; it exists only in tests.
func MarkCrashedKeepingCommitLog(tb testing.TB, dir string) {
	tb.Helper()
	for _, name := range []string{"consumequeue", "checkpoint"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
}
