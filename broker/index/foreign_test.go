package index_test

import (
	"path"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/index"
)

// TestForeignFilesIgnored: a file the store does not write in the index
// directory, even a second name of an index file (FUSE's .fuse_hidden*
// after a crash), is not loaded as an index file, and is left in place.
func TestForeignFilesIgnored(t *testing.T) {
	afs := afero.NewMemMapFs()
	s := open(t, memfs.New(afs), true, 0)
	put(t, s, req("T", 100, t0, "a", ""))
	files := s.Files()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := afero.ReadFile(afs, files[0])
	if err != nil {
		t.Fatal(err)
	}
	stray := path.Join(index.Dir, ".fuse_hidden0000000a00000001")
	if err := afero.WriteFile(afs, stray, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, memfs.New(afs), true, 0)
	defer s.Close()
	if got := s.Files(); len(got) != 1 || got[0] != files[0] {
		t.Fatalf("files %v, want only %v", got, files)
	}
	if ok, _ := afero.Exists(afs, stray); !ok {
		t.Fatalf("%s was deleted", stray)
	}
}
