package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyNamesABadDir: a --dir that is missing or a file is refused
// with what is wrong with it, not with the storage backend's error.
func TestVerifyNamesABadDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "store directory " + filepath.Join(dir, "missing") + " does not exist"},
		{file, "store directory " + file + " is a file, not a directory"},
	} {
		var out, errOut bytes.Buffer
		code := execute([]string{"verify", "--dir", c.dir}, &out, &errOut)
		if code != exitError || !strings.Contains(errOut.String(), c.want) || strings.Contains(errOut.String(), "mmap") {
			t.Errorf("verify --dir %s: exit %d, stderr %q; want exit %d and %q", c.dir, code, errOut.String(), exitError, c.want)
		}
	}
}
