package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
)

// Checkpoint layout: a 4096-byte file holding three big-endian int64
// millisecond timestamps.
//
//	0 physicMsgTimestamp | 8 logicsMsgTimestamp | 16 indexMsgTimestamp
//
// The 24 bytes live in one 512-byte sector, so a power cut leaves either the
// old or the new values, never a mix.
const (
	checkpointSize      = 4096
	checkpointUsedBytes = 24
)

// Checkpoint is the store's checkpoint file as its users see it: the
// timestamps up to which the CommitLog, the ConsumeQueues and the index are
// durable. The broker's index service records its own timestamp here.
type Checkpoint interface {
	// Timestamps returns physicMsgTimestamp, logicsMsgTimestamp and
	// indexMsgTimestamp (ms; 0 when unknown).
	Timestamps() (physic, logics, index int64)
	// MinTimestamp is the time from which abnormal recovery replays.
	MinTimestamp() int64
	// SetIndex records the index timestamp; the next checkpoint flush
	// writes it.
	SetIndex(ts int64)
	// Flush writes and syncs the checkpoint file.
	Flush() error
}

var _ Checkpoint = (*storeCheckpoint)(nil)

// storeCheckpoint records how far the CommitLog, the ConsumeQueues and the
// index are known to be durable, by store timestamp. Abnormal recovery
// replays the CommitLog from the first file older than the minimum.
type storeCheckpoint struct {
	mu                 sync.Mutex
	seg                backend.Segment
	physicMsgTimestamp int64
	logicsMsgTimestamp int64
	indexMsgTimestamp  int64
	buf                [checkpointUsedBytes]byte
}

// openCheckpoint opens or creates the checkpoint file. valid is false when
// the file was missing or held values that cannot be timestamps; the
// timestamps are then 0, which makes recovery start from the first file.
func openCheckpoint(fs backend.FS, name string, now int64, log *slog.Logger) (cp *storeCheckpoint, valid bool, err error) {
	seg, err := fs.Open(name)
	if err == nil && seg.Size() < checkpointUsedBytes {
		// A short checkpoint holds no timestamps, like a missing one:
		// recovery replays from the first file, and a
		// full-sized checkpoint replaces it.
		log.Warn("checkpoint too short to hold its timestamps; replaced, and recovery replays the commitlog from its first file",
			"file", name, "size", seg.Size(), "want", checkpointSize)
		seg.Close()
		if err = fs.Remove(name); err != nil {
			return nil, false, fmt.Errorf("replace short checkpoint %s: %w", name, err)
		}
		err = backend.ErrNotExist
	}
	if errors.Is(err, backend.ErrNotExist) {
		if seg, err = fs.Create(name, checkpointSize); err != nil {
			return nil, false, fmt.Errorf("create checkpoint %s: %w", name, err)
		}
		// Its first flush must not be lost with its name.
		if err := fs.SyncDir(path.Dir(name)); err != nil {
			seg.Close()
			return nil, false, fmt.Errorf("%w: sync dir of checkpoint %s: %w", ErrFlushFailed, name, err)
		}
		return &storeCheckpoint{seg: seg}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open checkpoint %s: %w", name, err)
	}
	cp = &storeCheckpoint{seg: seg}
	ts, valid := decodeCheckpoint(seg.View(0, checkpointUsedBytes), now)
	cp.physicMsgTimestamp, cp.logicsMsgTimestamp, cp.indexMsgTimestamp = ts.Physic, ts.Logics, ts.Index
	return cp, valid, nil
}

// CheckpointTimestamps are the three timestamps of a checkpoint file.
type CheckpointTimestamps struct {
	Physic, Logics, Index int64
}

// decodeCheckpoint reads the three timestamps of b (at least 24 bytes). A
// timestamp in the future (a day of clock skew allowed) or below 0 is
// garbage: then nothing in the file is trusted and all three are 0.
func decodeCheckpoint(b []byte, now int64) (CheckpointTimestamps, bool) {
	ts := CheckpointTimestamps{
		Physic: int64(binary.BigEndian.Uint64(b)),
		Logics: int64(binary.BigEndian.Uint64(b[8:])),
		Index:  int64(binary.BigEndian.Uint64(b[16:])),
	}
	for _, v := range []int64{ts.Physic, ts.Logics, ts.Index} {
		if v < 0 || v > now+24*3600*1000 {
			return CheckpointTimestamps{}, false
		}
	}
	return ts, true
}

// Timestamps returns physicMsgTimestamp, logicsMsgTimestamp and
// indexMsgTimestamp.
func (c *storeCheckpoint) Timestamps() (physic, logics, index int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.physicMsgTimestamp, c.logicsMsgTimestamp, c.indexMsgTimestamp
}

// MinTimestamp is RocketMQ's getMinTimestamp: min(physic, logics) - 3 s,
// the margin covering messages that share a millisecond.
func (c *storeCheckpoint) MinTimestamp() int64 {
	p, l, _ := c.Timestamps()
	return max(0, min(p, l)-3000)
}

func (c *storeCheckpoint) setPhysic(ts int64) {
	c.mu.Lock()
	c.physicMsgTimestamp = ts
	c.mu.Unlock()
}

func (c *storeCheckpoint) setLogics(ts int64) {
	c.mu.Lock()
	c.logicsMsgTimestamp = ts
	c.mu.Unlock()
}

func (c *storeCheckpoint) logics() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logicsMsgTimestamp
}

// SetIndex records the index timestamp (set by the index service).
func (c *storeCheckpoint) SetIndex(ts int64) {
	c.mu.Lock()
	c.indexMsgTimestamp = ts
	c.mu.Unlock()
}

// flush writes the three timestamps and syncs them.
func (c *storeCheckpoint) flush() error {
	return c.Flush()
}

// Flush writes the three timestamps and syncs them (the index service calls
// it after SetIndex so that its timestamp is durable).
func (c *storeCheckpoint) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := binary.BigEndian.AppendUint64(c.buf[:0], uint64(c.physicMsgTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(c.logicsMsgTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(c.indexMsgTimestamp))
	if _, err := c.seg.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := c.seg.Sync(0, checkpointUsedBytes); err != nil {
		return fmt.Errorf("%w: sync checkpoint: %w", ErrFlushFailed, err)
	}
	return nil
}

func (c *storeCheckpoint) close() error { return c.seg.Close() }
