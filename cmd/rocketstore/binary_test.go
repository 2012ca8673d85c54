package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the rocketstore command once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rocketstore-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rocketstore")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build rocketstore: %v", buildErr)
	}
	return binPath
}

func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestBinaryReadAndStatsOnFixture(t *testing.T) {
	dir := copyFixture(t, "store-2019-unit")
	out, errOut, code := runBinary(t, "read", "--dir", dir, "--topic", "abc", "--queue", "0", "--max", "100", "--json")
	if code != 0 {
		t.Fatalf("read exited %d: %s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var m readMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.QueueOffset != int64(n) || m.Body != "Once, there was a chance for me!" || m.Tags != "TAG1" ||
			m.StoreHost != "10.1.30.38:8123" {
			t.Fatalf("message %d: %+v", n, m)
		}
		n++
	}
	if n != 47 {
		t.Fatalf("read printed %d messages, want 47", n)
	}
	out, errOut, code = runBinary(t, "stats", "--dir", dir)
	if code != 0 || !strings.Contains(out, "abc    0      0    47") {
		t.Fatalf("stats exited %d:\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "consumequeue")); !os.IsNotExist(err) {
		t.Fatal("read/stats wrote a consumequeue directory into the store")
	}
}

// Both refuse, clearly, a store that a running process holds.
func TestBinaryRefusesLockedStore(t *testing.T) {
	dir := t.TempDir()
	fs, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, args := range [][]string{
		{"read", "--dir", dir, "--topic", "t", "--queue", "0"},
		{"stats", "--dir", dir},
	} {
		_, errOut, code := runBinary(t, args...)
		if code == 0 || !strings.Contains(errOut, "in use by another process") {
			t.Fatalf("%s on a held store: exit %d, stderr %q", args[0], code, errOut)
		}
	}
	// A second writer is refused too.
	if _, err := engine.Open(fs, hooks.Manual(engine.Config{})); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second writer: %v", err)
	}
}
