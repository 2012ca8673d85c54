package verify

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
)

// Checkpoint layout (spec section 4): a 4096-byte file holding three
// big-endian int64 millisecond timestamps.
//
//	0 physicMsgTimestamp | 8 logicsMsgTimestamp | 16 indexMsgTimestamp
const (
	checkpointSize = 4096
	checkpointUsed = 24
)

// checkCheckpoint checks that the checkpoint exists, has its size, and that
// no timestamp is negative or ahead of the last record: recovery trusts
// everything older than the checkpoint, so a checkpoint ahead of the data
// would let it skip records that were never made durable.
func (c *checker) checkCheckpoint() error {
	data, err := backend.ReadFile(c.fs, checkpointFile)
	if errors.Is(err, backend.ErrNotExist) {
		if c.rep.CommitLogFiles > 0 {
			c.violation(KindCheckpoint, checkpointFile, 0, "missing, but the store has commitlog files")
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify: read %s: %w", checkpointFile, err)
	}
	if len(data) != checkpointSize {
		c.violation(KindCheckpoint, checkpointFile, 0, "file is %d bytes, want %d", len(data), checkpointSize)
		if len(data) < checkpointUsed {
			return nil
		}
	}
	cp := &c.rep.Checkpoint
	cp.Present = true
	cp.PhysicMsgTimestamp = int64(binary.BigEndian.Uint64(data[0:]))
	cp.LogicsMsgTimestamp = int64(binary.BigEndian.Uint64(data[8:]))
	cp.IndexMsgTimestamp = int64(binary.BigEndian.Uint64(data[16:]))
	limit := c.rep.LastStoreTimestamp + c.opts.CheckpointMargin.Milliseconds()
	for i, f := range []struct {
		name string
		ts   int64
	}{
		{"physicMsgTimestamp", cp.PhysicMsgTimestamp},
		{"logicsMsgTimestamp", cp.LogicsMsgTimestamp},
		{"indexMsgTimestamp", cp.IndexMsgTimestamp},
	} {
		off := int64(i * 8)
		switch {
		case f.ts < 0:
			c.violation(KindCheckpoint, checkpointFile, off, "%s %d is negative", f.name, f.ts)
		case f.ts > limit && c.rep.Records == 0:
			// No record left (retention removed them, or recovery cut an
			// unsynced log): the times are those of records that are
			// gone, and recovery of an empty log scans nothing.
		case f.ts > limit:
			c.violation(KindCheckpoint, checkpointFile, off, "%s %d (%s) is ahead of the last record's store time %d (%s) by more than %s",
				f.name, f.ts, rfc3339Millis(f.ts), c.rep.LastStoreTimestamp, rfc3339Millis(c.rep.LastStoreTimestamp), c.opts.CheckpointMargin)
		}
	}
	return nil
}
