package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMappedReadFaultBecomesError: a mapped page that
// cannot be read (here: the file was truncated under its mapping; on a
// full tmpfs, a hole of a sparse file does the same) raises SIGBUS, which
// the offline tools turn into an error instead of dying with "fatal
// error: fault".
func TestMappedReadFaultBecomesError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	must(t, f.Truncate(2*4096))
	b, err := unix.Mmap(int(f.Fd()), 0, 2*4096, unix.PROT_READ, unix.MAP_SHARED)
	must(t, err)
	defer unix.Munmap(b)
	must(t, f.Truncate(0))
	var sum byte
	err = faultsAsErrors(func() error {
		sum += b[4096]
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("read past the truncated end: err = %v, want the fault as an error", err)
	}
	// A panic that is not a fault still panics.
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v", r)
		}
	}()
	_ = faultsAsErrors(func() error { panic("not a fault") })
}
