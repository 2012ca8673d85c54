package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/backend"
)

// StoreState is what a store directory says about its last run, read
// without opening (or changing) the store.
type StoreState struct {
	// LastExitOK is set when the abort marker is absent: the last process
	// closed the store cleanly (or never opened it).
	LastExitOK bool
	// CheckpointValid is false when the checkpoint is missing or garbage.
	CheckpointValid bool
	// Checkpoint holds the checkpoint's timestamps (zero when invalid).
	Checkpoint CheckpointTimestamps
}

// Inspect reads the abort marker and the checkpoint of the store in fs.
// Services that recover alongside the engine (the message index) use it
// before Open, whose recovery already feeds them.
func Inspect(fs backend.FS) (StoreState, error) {
	var st StoreState
	_, err := fs.Stat(abortFile)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		st.LastExitOK = true
	case err != nil:
		return st, fmt.Errorf("engine: inspect %s: %w", abortFile, err)
	}
	b, err := backend.ReadFile(fs, checkpointFile)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("engine: inspect %s: %w", checkpointFile, err)
	case len(b) < checkpointUsedBytes:
		return st, nil
	}
	st.Checkpoint, st.CheckpointValid = decodeCheckpoint(b, time.Now().UnixMilli())
	return st, nil
}
