package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLogKeptOnlyWhenWritten: the server bench keeps serve's log file
// (in --out when given) and names it on stderr when serve wrote anything,
// and leaves nothing behind when it wrote nothing.
func TestServeLogKeptOnlyWhenWritten(t *testing.T) {
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "out")

	quiet, err := newServeLog(tmp, "")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	quiet.close(&stderr)
	if left, _ := os.ReadDir(tmp); len(left) != 0 || stderr.Len() != 0 {
		t.Fatalf("empty log: %d files left in %s, stderr %q", len(left), tmp, stderr.String())
	}

	loud, err := newServeLog(tmp, out)
	if err != nil {
		t.Fatal(err)
	}
	const line = "level=ERROR msg=\"flush commitlog\" err=boom\n"
	if _, err := loud.f.WriteString(line); err != nil {
		t.Fatal(err)
	}
	if got := loud.text(); got != line {
		t.Fatalf("text() = %q, want %q", got, line)
	}
	loud.close(&stderr)
	path := loud.f.Name()
	if filepath.Dir(path) != out {
		t.Errorf("log at %s, want it in --out %s", path, out)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != line {
		t.Fatalf("kept log: %q, %v", b, err)
	}
	if !strings.Contains(stderr.String(), path) {
		t.Errorf("stderr %q does not name %s", stderr.String(), path)
	}
}
