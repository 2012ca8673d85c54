package rocketstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

// fullDisk is an afero.Fs whose files refuse writes with ENOSPC once full
// is set, as a disk that filled up under the store.
type fullDisk struct {
	afero.Fs
	full atomic.Bool
}

func (d *fullDisk) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := d.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: f, disk: d}, nil
}

func (d *fullDisk) Open(name string) (afero.File, error) { return d.OpenFile(name, os.O_RDONLY, 0) }

type fullFile struct {
	afero.File
	disk *fullDisk
}

func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.disk.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

// TestPutKeepsTheCauseOfAFailedSync checks that a SyncFlush Put that meets
// a full disk returns an error in which errors.Is finds both the store's
// sentinel and the OS cause, and that later puts still carry that cause.
func TestPutKeepsTheCauseOfAFailedSync(t *testing.T) {
	disk := &fullDisk{Fs: afero.NewMemMapFs()}
	s, err := rocketstore.OpenFS(memfs.New(disk), rocketstore.Config{FlushDiskType: rocketstore.SyncFlush, CommitLogFileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	msg := &rocketstore.Message{Topic: "orders", Body: []byte("order 42 created")}
	if _, err := s.Put(ctx, msg); err != nil {
		t.Fatalf("put before the disk filled: %v", err)
	}

	disk.full.Store(true)
	_, err = s.Put(ctx, msg)
	if !errors.Is(err, rocketstore.ErrFlushFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("put on a full disk: %v; want errors.Is ErrFlushFailed and ENOSPC", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("put on a full disk: %v; want the *fs.PathError naming the file", err)
	}

	disk.full.Store(false)
	_, err = s.Put(ctx, msg)
	if !errors.Is(err, rocketstore.ErrReadOnly) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("put after a failed sync: %v; want errors.Is ErrReadOnly and ENOSPC", err)
	}
}
