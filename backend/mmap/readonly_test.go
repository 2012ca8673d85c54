package mmap

import (
	"errors"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

func TestReadOnlyNeverWrites(t *testing.T) {
	dir := t.TempDir()
	rw, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := rw.Create("f", 4096)
	if err != nil {
		t.Fatal(err)
	}
	seg.WriteAt([]byte("hello"), 0)
	seg.Close()

	ro, err := NewReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ro.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := string(s.View(0, 5)); got != "hello" {
		t.Fatalf("view = %q", got)
	}
	if _, err := s.WriteAt([]byte("x"), 0); !errors.Is(err, backend.ErrReadOnly) {
		t.Fatalf("WriteAt = %v, want ErrReadOnly", err)
	}
	for name, err := range map[string]error{
		"create":    func() error { _, err := ro.Create("g", 10); return err }(),
		"remove":    ro.Remove("f"),
		"rename":    ro.Rename("f", "g"),
		"mkdirall":  ro.MkdirAll("d"),
		"removeall": ro.RemoveAll("d"),
	} {
		if !errors.Is(err, backend.ErrReadOnly) {
			t.Errorf("%s = %v, want ErrReadOnly", name, err)
		}
	}
}

func TestReadOnlyLockIsShared(t *testing.T) {
	dir := t.TempDir()
	ro, err := NewReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	// No lock file yet: nothing to share, nothing refused.
	u0, err := ro.Lock("lock")
	if err != nil {
		t.Fatal(err)
	}
	u0.Unlock()

	rw, _ := New(dir)
	w, err := rw.Lock("lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Lock("lock"); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("reader lock while a writer holds it = %v, want ErrLocked", err)
	}
	w.Unlock()
	r1, err := ro.Lock("lock")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ro.Lock("lock")
	if err != nil {
		t.Fatalf("second reader refused: %v", err)
	}
	if _, err := rw.Lock("lock"); !errors.Is(err, backend.ErrLocked) {
		t.Fatalf("writer lock while readers hold it = %v, want ErrLocked", err)
	}
	r1.Unlock()
	r2.Unlock()
}

func TestNewReadOnlyMissingDir(t *testing.T) {
	if _, err := NewReadOnly(t.TempDir() + "/missing"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}
