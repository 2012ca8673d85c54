package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// bench exits non-zero when a workload fails: here every mmap workload,
// since the parent of its temporary stores does not exist.
func TestBenchFailsWhenAWorkloadFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	stdout, stderr, code := runBinary(t, "bench", "--quick", "--backend", "mmap", "--tmp", missing)
	if code == 0 {
		t.Fatalf("bench exited 0 with failing workloads\nstdout:\n%s", stdout)
	}
	if !strings.Contains(stdout, "error:") || !strings.Contains(stderr, "workloads failed") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
