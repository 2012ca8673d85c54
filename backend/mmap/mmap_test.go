package mmap

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/backendtest"
)

func TestMain(m *testing.M) {
	// The cross-process lock test re-runs this binary as the other process.
	if root := os.Getenv(lockHelperEnv); root != "" {
		os.Exit(lockHelper(root))
	}
	goleak.VerifyTestMain(m)
}

func TestContract(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.FS {
		return newFS(t)
	})
}

func newFS(t testing.TB) *FS {
	t.Helper()
	fsys, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func mustCreate(t testing.TB, fsys *FS, name string, size int64) backend.Segment {
	t.Helper()
	seg, err := fsys.Create(name, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seg.Close() })
	return seg
}

func mustOpen(t testing.TB, fsys *FS, name string) backend.Segment {
	t.Helper()
	seg, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seg.Close() })
	return seg
}

func mustWrite(t testing.TB, seg backend.Segment, p []byte, off int64) {
	t.Helper()
	if _, err := seg.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}
