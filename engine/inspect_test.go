package engine_test

import (
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

func TestInspect(t *testing.T) {
	fs := memfs.New(nil)
	st, err := engine.Inspect(fs)
	if err != nil || !st.LastExitOK || st.CheckpointValid {
		t.Fatalf("empty dir: %+v %v", st, err)
	}
	s, err := engine.Open(fs, hooks.Manual(engine.Config{CommitLogFileSize: 4096}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), &engine.Message{Topic: "t", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	st, _ = engine.Inspect(fs)
	if st.LastExitOK {
		t.Fatal("abort marker not seen while the store is open")
	}
	s.Checkpoint().SetIndex(1234)
	if err := s.Checkpoint().Flush(); err != nil {
		t.Fatal(err)
	}
	if st, _ = engine.Inspect(fs); !st.CheckpointValid || st.Checkpoint.Index != 1234 {
		t.Fatalf("after Flush: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ = engine.Inspect(fs); !st.LastExitOK || st.Checkpoint.Physic == 0 {
		t.Fatalf("after Close: %+v", st)
	}
}
