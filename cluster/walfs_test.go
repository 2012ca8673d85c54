package cluster

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
)

var quietWalfs = slog.New(slog.NewTextHandler(io.Discard, nil))

// waitSpare waits until z has a spare ready.
func waitSpare(t *testing.T, z *zeroFS) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		z.mu.Lock()
		ready := z.ready
		z.mu.Unlock()
		if ready {
			return
		}
	}
	t.Fatalf("no spare after 10 s (errors %d)", z.errs.Load())
}

// assertZero checks that path holds size zero bytes.
func assertZero(t *testing.T, path string, size int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size {
		t.Fatalf("%s: %d bytes, want %d", path, len(b), size)
	}
	if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("%s: non-zero byte at %d", path, i)
	}
}

func TestZeroFSTakesSpareAfterHalfSegment(t *testing.T) {
	dir := t.TempDir()
	const size = 3<<20 + 5 // not a multiple of the fill chunk
	z, err := newZeroFS(dir, size, quietWalfs)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	// No spare yet: raft-wal's fallocate.
	first, err := z.Create(dir, "a.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if z.fallbacks.Load() != 1 || z.taken.Load() != 0 {
		t.Fatalf("fallbacks %d taken %d, want 1 0", z.fallbacks.Load(), z.taken.Load())
	}
	// Below half: no spare is asked for.
	if _, err := first.WriteAt([]byte("x"), size/2-10); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, spareName)); err == nil {
		t.Fatal("spare prepared before the tail segment was half written")
	}
	if _, err := first.WriteAt([]byte("y"), size/2); err != nil {
		t.Fatal(err)
	}
	waitSpare(t, z)
	assertZero(t, filepath.Join(dir, spareName), size)
	names, err := z.ListDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "a.wal" {
		t.Fatalf("ListDir = %q, want only a.wal", names)
	}
	// An existing name is refused, as with O_EXCL, without using up the spare's file.
	if _, err := z.Create(dir, "a.wal", size); err == nil {
		t.Fatal("Create over an existing segment succeeded")
	}
	waitSpare(t, z) // the refused Create woke nothing: the spare is still there
	next, err := z.Create(dir, "b.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	if z.taken.Load() != 1 {
		t.Fatalf("taken %d, want 1", z.taken.Load())
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); !os.IsNotExist(err) {
		t.Fatalf("spare still there after Create: %v", err)
	}
	nf := next.(*tailFile).WritableFile.(*newFile)
	if nf.synced.Load() {
		t.Fatal("directory counted as synced before the first Sync")
	}
	if _, err := next.WriteAt([]byte("frame"), 0); err != nil {
		t.Fatal(err)
	}
	if err := next.Sync(); err != nil {
		t.Fatal(err)
	}
	if !nf.synced.Load() {
		t.Fatal("the first Sync did not fsync the directory")
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "b.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || string(b[:5]) != "frame" || bytes.ContainsFunc(b[5:], func(r rune) bool { return r != 0 }) {
		t.Fatalf("b.wal: %d bytes, want %d with zeros past the frame", len(b), size)
	}
}

func TestZeroFSPrepareErrorIsCountedLoggedAndFallsBack(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	z, err := newZeroFS(dir, 1<<20, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	// A directory where the spare goes makes the preparation fail.
	if err := os.Mkdir(filepath.Join(dir, spareName), 0o755); err != nil {
		t.Fatal(err)
	}
	wf, err := z.Create(dir, "a.wal", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	if _, err := wf.WriteAt(make([]byte, 1), 1<<19); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); z.errs.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no error counted after 10 s")
		}
	}
	if !strings.Contains(logs.String(), "cannot use a zero-filled Raft log segment") || !strings.Contains(logs.String(), spareName) {
		t.Fatalf("log does not say what failed where: %q", logs.String())
	}
	if _, err := z.Create(dir, "b.wal", 1<<20); err != nil {
		t.Fatal(err)
	}
	if z.fallbacks.Load() != 2 || z.taken.Load() != 0 {
		t.Fatalf("fallbacks %d taken %d, want 2 0", z.fallbacks.Load(), z.taken.Load())
	}
	fi, err := os.Stat(filepath.Join(dir, "b.wal"))
	if err != nil || fi.Size() != 1<<20 {
		t.Fatalf("fallback segment: %v, %v", fi, err)
	}
	if err := os.Remove(filepath.Join(dir, spareName)); err != nil {
		t.Fatal(err)
	}
}

func TestZeroFSCloseStopsAFillMidway(t *testing.T) {
	dir := t.TempDir()
	z, err := newZeroFS(dir, 256<<20, quietWalfs)
	if err != nil {
		t.Fatal(err)
	}
	z.kick <- struct{}{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, spareName)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fill did not start")
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-z.done:
	default:
		t.Fatal("the goroutine runs after Close")
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); !os.IsNotExist(err) {
		t.Fatalf("spare left after Close: %v", err)
	}
	if z.errs.Load() != 0 {
		t.Fatalf("stopping counted as %d errors", z.errs.Load())
	}
}

// TestZeroFSUnderRaftWAL rotates raft-wal through spares and reads every
// entry back, before and after reopening.
func TestZeroFSUnderRaftWAL(t *testing.T) {
	dir := t.TempDir()
	const seg = 64 << 10
	open := func() (*wal.WAL, *zeroFS, *metadb.BoltMetaDB) {
		z, err := newZeroFS(dir, seg, quietWalfs)
		if err != nil {
			t.Fatal(err)
		}
		meta := &metadb.BoltMetaDB{}
		w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(seg),
			wal.WithSegmentFiler(segment.NewFiler(dir, z)))
		if err != nil {
			t.Fatal(err)
		}
		return w, z, meta
	}
	w, z, meta := open()
	const n = 400
	for i := uint64(1); i <= n; i++ {
		data := bytes.Repeat([]byte{byte(i)}, 1000)
		if err := w.StoreLogs([]*raft.Log{{Index: i, Term: 1, Data: data}}); err != nil {
			t.Fatal(err)
		}
		// Give the fill time so rotations can take spares.
		if i%50 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if z.taken.Load() == 0 {
		t.Fatalf("no spare taken in %d rotations (fallbacks %d, errors %d)", z.fallbacks.Load()-1, z.fallbacks.Load(), z.errs.Load())
	}
	check := func(w *wal.WAL) {
		for i := uint64(1); i <= n; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if !bytes.Equal(l.Data, bytes.Repeat([]byte{byte(i)}, 1000)) {
				t.Fatalf("entry %d: wrong data", i)
			}
		}
	}
	check(w)
	closeAll := func(w *wal.WAL, z *zeroFS, meta *metadb.BoltMetaDB) {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := meta.Close(); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("taken %d, fallbacks %d", z.taken.Load(), z.fallbacks.Load())
	closeAll(w, z, meta)
	w, z, meta = open()
	check(w)
	if last, err := w.LastIndex(); err != nil || last != n {
		t.Fatalf("last index %d, %v; want %d", last, err, n)
	}
	closeAll(w, z, meta)
}
