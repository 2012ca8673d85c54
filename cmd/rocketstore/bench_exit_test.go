package main

import (
	"bytes"
	"os/exec"
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

// bench --server run away from the repository cannot start the NATS side;
// it says so under the table, not only on stderr, so that saved output is
// not taken for a comparison.
func TestBenchServerSaysNATSWasNotRun(t *testing.T) {
	cmd := exec.Command(binary(t), "bench", "--server", "--server-duration", "300ms", "--server-conns", "1",
		"--server-window", "8", "--server-sizes", "128", "--tmp", t.TempDir())
	cmd.Dir = t.TempDir()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "rocketstore") || !strings.Contains(out.String(), "NATS side not run") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}
