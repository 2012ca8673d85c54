package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestBenchHelpReadsRight: --server is a switch (no argument shown) and
// --backend lists every value it takes.
func TestBenchHelpReadsRight(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := execute([]string{"bench", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("bench --help: exit %d\n%s", code, errOut.String())
	}
	help := out.String()
	if !regexp.MustCompile(`(?m)^\s+--server\s{2,}\S`).MatchString(help) || strings.Contains(help, "--server rocketstore") {
		t.Errorf("--server reads as if it took an argument:\n%s", help)
	}
	if !regexp.MustCompile(`(?m)^\s+--backend string .*mmap, memfs, both, or none`).MatchString(help) {
		t.Errorf("--backend does not list none:\n%s", help)
	}
}
