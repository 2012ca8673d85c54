package engine_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
)

// TestPutErrorKeepsBackendCause checks, for each kind of failed CommitLog
// sync, that Put's error wraps both ErrFlushFailed and the backend's cause,
// and that the read-only store's later refusals still carry that cause.
func TestPutErrorKeepsBackendCause(t *testing.T) {
	for _, cause := range []error{syscall.ENOSPC, syscall.EIO, backend.ErrClosed} {
		t.Run(cause.Error(), func(t *testing.T) {
			fs, err := crashsim.New(nil, crashsim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := engine.Open(fs, engine.Config{FlushDiskType: engine.SyncFlush, CommitLogFileSize: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			msg := &engine.Message{Topic: "orders", Body: []byte("order 42 created")}
			if _, err := s.Put(ctx, msg); err != nil {
				t.Fatalf("put before the fault: %v", err)
			}
			// A backend reports its cause wrapped with the place, as
			// *fs.PathError does.
			fs.SetInjector(crashsim.Fail(crashsim.OnKind(crashsim.OpSync), fmt.Errorf("sync commitlog: %w", cause)))
			_, err = s.Put(ctx, msg)
			if !errors.Is(err, engine.ErrFlushFailed) || !errors.Is(err, cause) {
				t.Fatalf("put: %v; want errors.Is ErrFlushFailed and %v", err, cause)
			}
			fs.SetInjector(nil)
			_, err = s.Put(ctx, msg)
			if !errors.Is(err, engine.ErrReadOnly) || !errors.Is(err, cause) {
				t.Fatalf("put after the failure: %v; want errors.Is ErrReadOnly and %v", err, cause)
			}
		})
	}
}
