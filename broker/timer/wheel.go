package timer

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

// wheelFile is the TimerWheel file in the store root.
const wheelFile = "timerwheel"

// maxDirtySlots is how many changed slots force a checkpoint: it bounds
// the memory of the redo list and the size of the checkpoint file.
const maxDirtySlots = 4096

// wheel is the TimerWheel: slot i of the file holds the slot whose time
// is ≡ i × precision modulo the wheel's length. A slot changed since the
// last checkpoint lives in dirty until the checkpoint saved it: the file
// only ever holds slots whose units are synced in the TimerLog.
type wheel struct {
	seg       backend.Segment
	slots     int64
	precision int64
	dirty     map[int64]record.TimerSlot // by slot time
	// saving holds the slots of the checkpoint in flight, which may or
	// may not be in the file yet; only the service goroutine uses it (the
	// checkpoint's writer has its own copy).
	saving map[int64]record.TimerSlot
}

// openWheel opens (or creates) the wheel file of slots slots.
func openWheel(fs backend.FS, slots, precision int64) (*wheel, error) {
	size := slots * record.TimerSlotSize
	seg, err := fs.Open(wheelFile)
	switch {
	case err == nil && seg.Size() != size:
		n := seg.Size()
		_ = seg.Close()
		return nil, fmt.Errorf("%w: %s holds %d bytes, want %d (%d slots): timerMaxDelaySec or timerPrecisionMs changed",
			ErrCorrupt, wheelFile, n, size, slots)
	case err != nil:
		if seg, err = fs.Create(wheelFile, size); err != nil {
			return nil, err
		}
		if err := fs.SyncDir("."); err != nil {
			_ = seg.Close()
			return nil, err
		}
	}
	return &wheel{seg: seg, slots: slots, precision: precision, dirty: map[int64]record.TimerSlot{}}, nil
}

func (w *wheel) offset(timeMs int64) int64 {
	return (timeMs / w.precision) % w.slots * record.TimerSlotSize
}

// get returns the slot of timeMs; an empty one (FirstPos -1) when it
// holds no unit of that time.
func (w *wheel) get(timeMs int64) record.TimerSlot {
	if s, ok := w.dirty[timeMs]; ok {
		return s
	}
	if s, ok := w.saving[timeMs]; ok {
		return s
	}
	s := record.DecodeTimerSlot(w.seg.View(w.offset(timeMs), record.TimerSlotSize))
	if s.TimeMs != timeMs {
		return record.TimerSlot{TimeMs: timeMs, FirstPos: -1, LastPos: -1}
	}
	return s
}

// put changes a slot (in memory until the next checkpoint).
func (w *wheel) put(s record.TimerSlot) { w.dirty[s.TimeMs] = s }

// detach moves the changed slots to saving and returns them by time, for
// a checkpoint: applied in this order, a later turn of the wheel wins
// over an earlier one.
func (w *wheel) detach() []record.TimerSlot {
	out := make([]record.TimerSlot, 0, len(w.dirty))
	for _, s := range w.dirty {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b record.TimerSlot) int { return cmp.Compare(a.TimeMs, b.TimeMs) })
	w.saving, w.dirty = w.dirty, map[int64]record.TimerSlot{}
	return out
}

// saved ends the checkpoint of the saving slots: they are in the file,
// or (ok false) go back to the next checkpoint unless changed since.
func (w *wheel) saved(ok bool) {
	if !ok {
		for t, s := range w.saving {
			if _, newer := w.dirty[t]; !newer {
				w.dirty[t] = s
			}
		}
	}
	w.saving = nil
}

// apply writes slots into the file and syncs them. It is idempotent:
// recovery applies the checkpoint's redo list again.
func (w *wheel) apply(slots []record.TimerSlot) error {
	var b [record.TimerSlotSize]byte
	lo, hi := w.seg.Size(), int64(0)
	for _, s := range slots {
		record.PutTimerSlot(b[:], s)
		off := w.offset(s.TimeMs)
		if _, err := w.seg.WriteAt(b[:], off); err != nil {
			return err
		}
		lo, hi = min(lo, off), max(hi, off+record.TimerSlotSize)
	}
	if hi <= lo {
		return nil
	}
	return w.seg.Sync(lo, hi-lo)
}

func (w *wheel) close() error { return w.seg.Close() }
