package broker

import (
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine"
)

// recoveryHint says, before engine.Open (whose recovery already feeds the
// index), whether the last exit was clean and the checkpoint's
// indexMsgTimestamp (0 when the checkpoint is missing or garbage).
func recoveryHint(fs backend.FS) (lastExitOK bool, indexTs int64, err error) {
	st, err := engine.Inspect(fs)
	if err != nil {
		return false, 0, err
	}
	return st.LastExitOK, st.Checkpoint.Index, nil
}
