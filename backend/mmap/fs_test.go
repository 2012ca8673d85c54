package mmap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
)

func TestNewCreatesRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b")
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("root not created: %v", err)
	}
	if fsys.Root() != root {
		t.Errorf("Root() = %q, want %q", fsys.Root(), root)
	}
}

func TestNamesOutsideRootRefused(t *testing.T) {
	fsys := newFS(t)
	for _, name := range []string{"../x", "/etc/passwd", "a/../../x", ".."} {
		if _, err := fsys.Create(name, 1); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Create(%q): err = %v, want fs.ErrInvalid", name, err)
		}
	}
}

func TestRootNames(t *testing.T) {
	fsys := newFS(t)
	mustCreate(t, fsys, "f", 1)
	for _, name := range []string{"", "."} {
		got, err := fsys.List(name)
		if err != nil || len(got) != 1 || got[0] != "f" {
			t.Errorf("List(%q) = %q, %v; want [f]", name, got, err)
		}
	}
	for _, name := range []string{"", "."} {
		if err := fsys.RemoveAll(name); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("RemoveAll(%q): err = %v, want fs.ErrInvalid", name, err)
		}
	}
}

func TestDirectoryIsNotAFile(t *testing.T) {
	fsys := newFS(t)
	if err := fsys.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("d"); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("Open(dir): err = %v, want ErrNotExist", err)
	}
	if _, err := fsys.Stat("d"); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("Stat(dir): err = %v, want ErrNotExist", err)
	}
}

func TestListSkipsSymlinks(t *testing.T) {
	fsys := newFS(t)
	mustCreate(t, fsys, "f", 1)
	if err := os.MkdirAll(filepath.Join(fsys.Root(), "d"), dirPerm); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"lf", "ld"} {
		if err := os.Symlink(link[1:], filepath.Join(fsys.Root(), link)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := fsys.List("")
	if err != nil || len(files) != 1 || files[0] != "f" {
		t.Errorf("List = %q, %v; want [f]", files, err)
	}
	dirs, err := fsys.ListDirs("")
	if err != nil || len(dirs) != 1 || dirs[0] != "d" {
		t.Errorf("ListDirs = %q, %v; want [d]", dirs, err)
	}
}

func TestErrorsNameOpAndPathOnce(t *testing.T) {
	fsys := newFS(t)
	_, err := fsys.Open("missing")
	want := "mmap: open " + filepath.Join(fsys.Root(), "missing") + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Open(missing): err = %v, want %q", err, want)
	}
}

func TestDiskUsage(t *testing.T) {
	u, err := DiskUsage(t.TempDir())
	if err != nil || u <= 0 || u > 1 {
		t.Fatalf("DiskUsage = %v, %v; want a share in (0, 1]", u, err)
	}
	if _, err := DiskUsage("/does/not/exist"); err == nil {
		t.Fatal("DiskUsage of a missing path succeeded")
	}
}
