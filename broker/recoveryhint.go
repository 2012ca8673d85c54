package broker

import (
	"encoding/binary"
	"errors"

	"github.com/rocketstore/rocketstore/backend"
)

// Names the engine keeps in the store root. The index service needs to know
// before engine.Open (whose recovery already dispatches to it) whether the
// last exit was clean and the checkpoint's indexMsgTimestamp; the engine
// has no API for either before Open, so the broker reads them, read-only.
const (
	abortFile       = "abort"
	checkpointFile  = "checkpoint"
	offIndexMsgTs   = 16
	checkpointBytes = 24
)

// recoveryHint reads whether the abort marker exists and the checkpoint's
// indexMsgTimestamp (0 when unreadable).
func recoveryHint(fs backend.FS) (lastExitOK bool, indexTs int64, err error) {
	_, err = fs.Stat(abortFile)
	switch {
	case errors.Is(err, backend.ErrNotExist):
		lastExitOK = true
	case err != nil:
		return false, 0, err
	}
	b, rerr := backend.ReadFile(fs, checkpointFile)
	if rerr == nil && len(b) >= checkpointBytes {
		indexTs = int64(binary.BigEndian.Uint64(b[offIndexMsgTs:]))
	}
	return lastExitOK, max(0, indexTs), nil
}
