package backendtest

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

var createTests = []test{
	{"ZeroFilledFixedSize", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		if seg.Name() != "seg" {
			t.Errorf("Name() = %q, want %q", seg.Name(), "seg")
		}
		wantContent(t, seg, make([]byte, segSize))
		wantSize(t, fsys, "seg", segSize)
	}},
	{"ExistingFailsAndKeepsFile", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "seg", segSize)
		data := pattern(segSize, 1)
		write(t, seg, data, 0)
		_, err := fsys.Create("seg", 10)
		wantErr(t, err, backend.ErrExist, "seg", "second Create")
		wantSize(t, fsys, "seg", segSize)
		wantContent(t, seg, data)
	}},
	{"SizeZero", func(t *testing.T, fsys backend.FS) {
		seg := create(t, fsys, "empty", 0)
		if seg.Size() != 0 {
			t.Fatalf("Size() = %d, want 0", seg.Size())
		}
		if v := seg.View(0, 0); v == nil || len(v) != 0 {
			t.Errorf("View(0, 0) = %v, want empty non-nil", v)
		}
		if v := seg.View(0, 1); v != nil {
			t.Errorf("View(0, 1) = %v, want nil", v)
		}
		n, err := seg.WriteAt([]byte{1}, 0)
		if n != 0 {
			t.Errorf("WriteAt 1 byte wrote %d", n)
		}
		wantErr(t, err, backend.ErrRange, "", "WriteAt(1 byte, 0)")
		if n, err := seg.WriteAt(nil, 0); n != 0 || err != nil {
			t.Errorf("WriteAt(nil, 0) = %d, %v; want 0, nil", n, err)
		}
		if err := seg.Sync(0, 0); err != nil {
			t.Errorf("Sync(0, 0): %v", err)
		}
		closeSeg(t, seg)
		wantSize(t, fsys, "empty", 0)
		if got := open(t, fsys, "empty").Size(); got != 0 {
			t.Errorf("reopened Size() = %d, want 0", got)
		}
	}},
	{"NegativeSizeFailsCleanly", func(t *testing.T, fsys backend.FS) {
		if seg, err := fsys.Create("neg", -1); err == nil {
			_ = seg.Close()
			t.Fatal("Create(-1) succeeded")
		}
		wantMissing(t, fsys, "neg")
	}},
	{"InDirectory", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "a/b")
		seg := create(t, fsys, "a/b/seg", 10)
		if seg.Name() != "a/b/seg" {
			t.Errorf("Name() = %q, want %q", seg.Name(), "a/b/seg")
		}
		got, err := fsys.List("a/b")
		wantNames(t, `List("a/b")`, got, err, "seg")
	}},
}

var openTests = []test{
	{"SizeFromFile", func(t *testing.T, fsys backend.FS) {
		closeSeg(t, create(t, fsys, "seg", segSize))
		seg := open(t, fsys, "seg")
		if seg.Size() != segSize || seg.Name() != "seg" {
			t.Fatalf("Open: Size() = %d, Name() = %q; want %d, %q", seg.Size(), seg.Name(), segSize, "seg")
		}
	}},
	{"SyncedDataPersists", func(t *testing.T, fsys backend.FS) {
		data := pattern(segSize, 2)
		createFile(t, fsys, "seg", data)
		wantContent(t, open(t, fsys, "seg"), data)
	}},
	{"WritableAfterReopen", func(t *testing.T, fsys backend.FS) {
		createFile(t, fsys, "seg", make([]byte, segSize))
		seg := open(t, fsys, "seg")
		data := pattern(segSize, 3)
		write(t, seg, data, 0)
		syncAll(t, seg)
		closeSeg(t, seg)
		wantContent(t, open(t, fsys, "seg"), data)
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		_, err := fsys.Open("missing")
		wantErr(t, err, backend.ErrNotExist, "missing", `Open("missing")`)
	}},
}

var statTests = []test{
	{"Size", func(t *testing.T, fsys backend.FS) {
		create(t, fsys, "seg", segSize)
		wantSize(t, fsys, "seg", segSize)
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		wantMissing(t, fsys, "missing")
	}},
}

var removeTests = []test{
	{"Deletes", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		createFile(t, fsys, "d/seg", pattern(100, 4))
		if err := fsys.Remove("d/seg"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		wantMissing(t, fsys, "d/seg")
		got, err := fsys.List("d")
		wantNames(t, `List("d")`, got, err)
		// The name is free again, at any size.
		wantContent(t, create(t, fsys, "d/seg", 10), make([]byte, 10))
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		wantErr(t, fsys.Remove("missing"), backend.ErrNotExist, "missing", `Remove("missing")`)
	}},
}

var renameTests = []test{
	{"Moves", func(t *testing.T, fsys backend.FS) {
		data := pattern(segSize, 5)
		createFile(t, fsys, "old", data)
		if err := fsys.Rename("old", "new"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantMissing(t, fsys, "old")
		wantContent(t, open(t, fsys, "new"), data)
	}},
	{"ReplacesTarget", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		data := pattern(segSize, 6)
		createFile(t, fsys, "d/new", pattern(segSize+5000, 7))
		createFile(t, fsys, "d/tmp", data)
		if err := fsys.Rename("d/tmp", "d/new"); err != nil {
			t.Fatalf("Rename over existing: %v", err)
		}
		got, err := fsys.List("d")
		wantNames(t, `List("d")`, got, err, "new")
		wantContent(t, open(t, fsys, "d/new"), data)
	}},
	{"AcrossDirectories", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "src", "dst")
		data := pattern(100, 8)
		createFile(t, fsys, "src/f", data)
		if err := fsys.Rename("src/f", "dst/f"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		wantMissing(t, fsys, "src/f")
		wantContent(t, open(t, fsys, "dst/f"), data)
	}},
	{"MissingSource", func(t *testing.T, fsys backend.FS) {
		err := fsys.Rename("missing", "new")
		wantErr(t, err, backend.ErrNotExist, "missing", `Rename("missing", "new")`)
		wantMissing(t, fsys, "new")
	}},
}

var listTests = []test{
	{"SortedRegularFilesOnly", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d/sub")
		for _, name := range []string{"d/c", "d/a", "d/b", "d/sub/z"} {
			createFile(t, fsys, name, []byte{1})
		}
		got, err := fsys.List("d")
		wantNames(t, `List("d")`, got, err, "a", "b", "c")
	}},
	{"Empty", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		got, err := fsys.List("d")
		wantNames(t, `List("d")`, got, err)
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		_, err := fsys.List("missing")
		wantErr(t, err, backend.ErrNotExist, "missing", `List("missing")`)
	}},
}

var listDirsTests = []test{
	{"SortedDirectoriesOnly", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d/y", "d/x", "d/z/deep")
		createFile(t, fsys, "d/file", []byte{1})
		got, err := fsys.ListDirs("d")
		wantNames(t, `ListDirs("d")`, got, err, "x", "y", "z")
	}},
	{"Empty", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		createFile(t, fsys, "d/file", []byte{1})
		got, err := fsys.ListDirs("d")
		wantNames(t, `ListDirs("d")`, got, err)
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		_, err := fsys.ListDirs("missing")
		wantErr(t, err, backend.ErrNotExist, "missing", `ListDirs("missing")`)
	}},
}

var mkdirAllTests = []test{
	{"NestedAndIdempotent", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "a/b/c", "a/b/c", "a/b")
		got, err := fsys.ListDirs("a/b")
		wantNames(t, `ListDirs("a/b")`, got, err, "c")
		create(t, fsys, "a/b/c/f", 1)
	}},
}

var removeAllTests = []test{
	{"RemovesTree", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "p/a/b", "p/keep")
		createFile(t, fsys, "p/a/f", []byte{1})
		createFile(t, fsys, "p/a/b/g", []byte{2})
		if err := fsys.RemoveAll("p/a"); err != nil {
			t.Fatalf("RemoveAll: %v", err)
		}
		wantMissing(t, fsys, "p/a/f")
		wantMissing(t, fsys, "p/a/b/g")
		_, err := fsys.List("p/a")
		wantErr(t, err, backend.ErrNotExist, "", `List("p/a")`)
		got, err := fsys.ListDirs("p")
		wantNames(t, `ListDirs("p")`, got, err, "keep")
	}},
	{"MissingIsNoop", func(t *testing.T, fsys backend.FS) {
		if err := fsys.RemoveAll("missing"); err != nil {
			t.Fatalf(`RemoveAll("missing"): %v`, err)
		}
	}},
}

var syncDirTests = []test{
	{"AfterChanges", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		createFile(t, fsys, "d/a", []byte{1})
		createFile(t, fsys, "d/b", []byte{2})
		if err := fsys.Rename("d/a", "d/c"); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove("d/b"); err != nil {
			t.Fatal(err)
		}
		if err := fsys.SyncDir("d"); err != nil {
			t.Fatalf(`SyncDir("d"): %v`, err)
		}
		got, err := fsys.List("d")
		wantNames(t, `List("d")`, got, err, "c")
	}},
	{"Missing", func(t *testing.T, fsys backend.FS) {
		err := fsys.SyncDir("missing")
		wantErr(t, err, backend.ErrNotExist, "missing", `SyncDir("missing")`)
	}},
}

var lockTests = []test{
	{"Exclusive", func(t *testing.T, fsys backend.FS) {
		l := lock(t, fsys, "LOCK")
		l2, err := fsys.Lock("LOCK")
		if err == nil {
			_ = l2.Unlock()
		}
		wantErr(t, err, backend.ErrLocked, "LOCK", "second Lock")
		unlock(t, l)
		unlock(t, lock(t, fsys, "LOCK"))
	}},
	{"CreatesFile", func(t *testing.T, fsys backend.FS) {
		defer unlock(t, lock(t, fsys, "LOCK"))
		if _, err := fsys.Stat("LOCK"); err != nil {
			t.Fatalf("Stat after Lock: %v", err)
		}
	}},
	{"KeepsExistingContent", func(t *testing.T, fsys backend.FS) {
		data := pattern(100, 9)
		createFile(t, fsys, "LOCK", data)
		unlock(t, lock(t, fsys, "LOCK"))
		wantContent(t, open(t, fsys, "LOCK"), data)
	}},
	{"NamesAreIndependent", func(t *testing.T, fsys backend.FS) {
		mkdirAll(t, fsys, "d")
		a := lock(t, fsys, "a")
		b := lock(t, fsys, "d/a")
		unlock(t, a)
		unlock(t, b)
	}},
}

func lock(t *testing.T, fsys backend.FS, name string) backend.Unlocker {
	t.Helper()
	l, err := fsys.Lock(name)
	if err != nil {
		t.Fatalf("Lock(%q): %v", name, err)
	}
	return l
}

func unlock(t *testing.T, l backend.Unlocker) {
	t.Helper()
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
