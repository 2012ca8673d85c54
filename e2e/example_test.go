package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's example program works against the server.
func TestExampleProgram(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the example")
	}
	n := node(t, t.TempDir(), "127.0.0.1:0")
	defer stopNode(t, n)
	bin := filepath.Join(t.TempDir(), "example")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./example").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "-namesrv", n.Addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all messages received") {
		t.Fatalf("example: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
