package timer

import (
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/record"
)

// checkpointFile is the timer checkpoint in the store root (RocketMQ's
// config/timercheck holds the first four fields in binary; this one adds
// the redo list and is JSON, saved crash-safely by configfile).
const checkpointFile = "config/timercheck.json"

// checkpoint is the timer state a recovery starts from.
type checkpoint struct {
	// QueueOffset is the next timer-topic ConsumeQueue offset to
	// enqueue (lastTimerQueueOffset).
	QueueOffset int64 `json:"timerQueueOffset"`
	// ReadTimeMs is the next slot to deliver (lastReadTimeMs).
	ReadTimeMs int64 `json:"readTimeMs"`
	// LogEnd is the synced end of the TimerLog (lastTimerLogFlushPos).
	LogEnd int64 `json:"timerLogEnd"`
	// ScanFrom is where recovery starts to read the CommitLog for
	// deliveries made after this checkpoint.
	ScanFrom int64 `json:"commitLogScanFrom"`
	// PrecisionMs and Slots are the wheel's geometry.
	PrecisionMs int64 `json:"timerPrecisionMs"`
	Slots       int64 `json:"slots"`
	// Redo holds the slots changed since the previous checkpoint as
	// [time, first, last, num]; recovery writes them into the wheel.
	Redo [][4]int64 `json:"redo,omitempty"`
	// FileMaxSlot is each TimerLog file's latest slot time.
	FileMaxSlot map[int64]int64 `json:"fileMaxSlotMs,omitempty"`
	// Pending counts the pending messages of each real topic.
	Pending map[string]int64 `json:"pending,omitempty"`
}

// loadCheckpoint reads the checkpoint; ok is false when there is none
// (a new store).
func loadCheckpoint(fs backend.FS) (ck checkpoint, ok bool, err error) {
	src, mainErr, err := configfile.Load(fs, checkpointFile, &ck)
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("timer: load %s: %w", checkpointFile, err)
	}
	_ = mainErr // the backup is the previous checkpoint: recovery redoes from it
	return ck, src != configfile.Missing, nil
}

func (ck *checkpoint) redoSlots() []record.TimerSlot {
	out := make([]record.TimerSlot, len(ck.Redo))
	for i, r := range ck.Redo {
		out[i] = record.TimerSlot{TimeMs: r[0], FirstPos: r[1], LastPos: r[2], Num: int32(r[3])}
	}
	return out
}

func redoList(slots []record.TimerSlot) [][4]int64 {
	out := make([][4]int64, len(slots))
	for i, s := range slots {
		out[i] = [4]int64{s.TimeMs, s.FirstPos, s.LastPos, int64(s.Num)}
	}
	return out
}

// PendingOnDisk returns the pending timer messages of each real topic as
// of the last checkpoint in fs (nil when there is none): what a tool that
// opens a store read-only can show.
func PendingOnDisk(fs backend.FS) (map[string]int64, error) {
	ck, ok, err := loadCheckpoint(fs)
	if err != nil || !ok {
		return nil, err
	}
	return ck.Pending, nil
}
