package engine_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine/enginetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContractMemfs(t *testing.T) {
	enginetest.Run(t, enginetest.Backend{
		Name:  "memfs",
		NewFS: func(t *testing.T) backend.FS { return memfs.New(nil) },
		Crash: func(t *testing.T, fs backend.FS) backend.FS { return memfs.New(fs.(*memfs.FS).Afero()) },
	})
}

func TestContractMmap(t *testing.T) {
	newFS := func(t *testing.T, dir string) backend.FS {
		fs, err := mmap.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	dirs := map[backend.FS]string{}
	enginetest.Run(t, enginetest.Backend{
		Name: "mmap",
		NewFS: func(t *testing.T) backend.FS {
			dir := t.TempDir()
			fs := newFS(t, dir)
			dirs[fs] = dir
			return fs
		},
		Reopen: func(t *testing.T, fs backend.FS) backend.FS {
			// A new process: a new FS value on the same directory.
			next := newFS(t, dirs[fs])
			dirs[next] = dirs[fs]
			return next
		},
	})
}
