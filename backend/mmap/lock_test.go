package mmap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

// lockHelperEnv makes the test binary act as a second process that tries
// to take "LOCK" in the root the variable names.
const lockHelperEnv = "MMAP_TEST_LOCK_HELPER_ROOT"

// Exit codes of the helper process.
const (
	helperGotLock = 0
	helperFailed  = 1
	helperLocked  = 3
)

func lockHelper(root string) int {
	fsys, err := New(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperFailed
	}
	l, err := fsys.Lock("LOCK")
	if errors.Is(err, backend.ErrLocked) {
		return helperLocked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperFailed
	}
	if err := l.Unlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperFailed
	}
	return helperGotLock
}

// TestLockAcrossProcesses is the case Lock exists for: a second process must
// not get the lock while the first holds it, and must once it is released.
func TestLockAcrossProcesses(t *testing.T) {
	fsys := newFS(t)
	l, err := fsys.Lock("LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if got := runLockHelper(t, fsys.Root()); got != helperLocked {
		t.Errorf("while locked: helper exit code %d, want %d", got, helperLocked)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := runLockHelper(t, fsys.Root()); got != helperGotLock {
		t.Errorf("after Unlock: helper exit code %d, want %d", got, helperGotLock)
	}
}

func runLockHelper(t *testing.T, root string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+root)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("running helper: %v", err)
	}
	return helperGotLock
}

func TestUnlockIdempotent(t *testing.T) {
	l, err := newFS(t).Lock("LOCK")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := l.Unlock(); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
}
