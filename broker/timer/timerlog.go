package timer

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

// logDir holds the TimerLog files, each named by its start offset (20
// digits, as the CommitLog's).
const logDir = "timerlog"

// timerLog is the append-only TimerLog. Units never straddle files (a
// file holds a whole number of units). Owned by the service goroutine.
//
// Invariant: synced <= end; every unit below end is readable.
type timerLog struct {
	fs       backend.FS
	fileSize int64
	files    []*logFile // by start; delivered ones deleted
	end      int64      // where the next unit goes
	synced   int64      // durable below this
}

// logFile is one TimerLog file and the latest slot time of its units:
// once the wheel delivered past it, the file is garbage.
type logFile struct {
	start   int64
	seg     backend.Segment
	maxSlot int64
}

// openTimerLog opens the TimerLog cut at end (the checkpoint's): the
// units after it were not synced when the checkpoint was taken and are
// written again by the recovery's enqueue. maxSlots comes from the
// checkpoint.
func openTimerLog(fs backend.FS, fileSize, end int64, maxSlots map[int64]int64) (*timerLog, error) {
	l := &timerLog{fs: fs, fileSize: fileSize, end: end, synced: end}
	if err := fs.MkdirAll(logDir); err != nil {
		return nil, err
	}
	names, err := fs.List(logDir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		start, perr := strconv.ParseInt(n, 10, 64)
		if perr != nil || len(n) != 20 {
			continue // a .tmp or foreign file
		}
		p := path.Join(logDir, n)
		if start >= end {
			// Created after the checkpoint: its units are written again.
			if err := fs.Remove(p); err != nil {
				return nil, err
			}
			continue
		}
		seg, err := fs.Open(p)
		if err != nil {
			return nil, err
		}
		if seg.Size() != fileSize {
			_ = seg.Close()
			return nil, fmt.Errorf("%w: TimerLog file %s holds %d bytes, want %d", ErrCorrupt, p, seg.Size(), fileSize)
		}
		l.files = append(l.files, &logFile{start: start, seg: seg, maxSlot: maxSlots[start]})
	}
	for _, f := range l.files {
		if f.start%fileSize != 0 {
			l.close()
			return nil, fmt.Errorf("%w: TimerLog file %020d does not start at a multiple of %d", ErrCorrupt, f.start, fileSize)
		}
	}
	// Files below the end may be missing: deleted once their slots were
	// delivered (a crash may keep one removal and lose another). The file
	// the end falls in takes the next units: a new one if it was deleted
	// (its units are all delivered), unless the end is at its start.
	if last := end - end%fileSize; end%fileSize != 0 && (len(l.files) == 0 || l.files[len(l.files)-1].start != last) {
		seg, err := fs.Create(path.Join(logDir, fmt.Sprintf("%020d", last)), fileSize)
		if err != nil {
			l.close()
			return nil, err
		}
		l.files = append(l.files, &logFile{start: last, seg: seg, maxSlot: maxSlots[last]})
		// A checkpoint syncs the directory only for a file whose first
		// unit it syncs: this one's must be durable now.
		if err := fs.SyncDir(logDir); err != nil {
			l.close()
			return nil, err
		}
	}
	return l, nil
}

// ErrCorrupt reports timer files that contradict each other.
var ErrCorrupt = errors.New("timer: corrupt timer store")

// append writes u at the end and returns its offset.
func (l *timerLog) append(u record.TimerUnit) (int64, error) {
	if l.end%l.fileSize == 0 && (len(l.files) == 0 || l.files[len(l.files)-1].start < l.end) {
		name := path.Join(logDir, fmt.Sprintf("%020d", l.end))
		seg, err := l.fs.Create(name, l.fileSize)
		if err != nil {
			return 0, err
		}
		l.files = append(l.files, &logFile{start: l.end, seg: seg})
	}
	f := l.files[len(l.files)-1]
	var b [record.TimerUnitSize]byte
	record.PutTimerUnit(b[:], u)
	if _, err := f.seg.WriteAt(b[:], l.end-f.start); err != nil {
		return 0, err
	}
	f.maxSlot = max(f.maxSlot, u.SlotTime())
	pos := l.end
	l.end += record.TimerUnitSize
	return pos, nil
}

// read returns the unit at pos.
func (l *timerLog) read(pos int64) (record.TimerUnit, error) {
	if pos < 0 || pos >= l.end || len(l.files) == 0 || pos < l.files[0].start {
		return record.TimerUnit{}, fmt.Errorf("%w: TimerLog offset %d outside [%d, %d)", ErrCorrupt, pos, l.start(), l.end)
	}
	start := pos - pos%l.fileSize
	i, found := slices.BinarySearchFunc(l.files, start, func(f *logFile, s int64) int { return cmp.Compare(f.start, s) })
	if !found {
		return record.TimerUnit{}, fmt.Errorf("%w: TimerLog offset %d: file %020d is deleted", ErrCorrupt, pos, start)
	}
	f := l.files[i]
	return record.DecodeTimerUnit(f.seg.View(pos-f.start, record.TimerUnitSize), pos)
}

func (l *timerLog) start() int64 {
	if len(l.files) == 0 {
		return l.end
	}
	return l.files[0].start
}

// logSync is a TimerLog range to sync.
type logSync struct {
	seg    interface{ Sync(off, n int64) error }
	off, n int64
}

// unsynced returns the ranges written since the last sync and whether a
// new file's directory entry needs a sync: a checkpoint syncs them from
// its own goroutine while units go on being appended past them.
func (l *timerLog) unsynced() (out []logSync, newFile bool) {
	for _, f := range l.files {
		lo, hi := max(l.synced, f.start), min(l.end, f.start+l.fileSize)
		if lo >= hi {
			continue
		}
		out = append(out, logSync{seg: f.seg, off: lo - f.start, n: hi - lo})
		newFile = newFile || lo == f.start
	}
	return out, newFile
}

// sync syncs the ranges unsynced returned.
func (l *timerLog) sync(ranges []logSync, newFile bool) error {
	for _, r := range ranges {
		if err := r.seg.Sync(r.off, r.n); err != nil {
			return err
		}
	}
	if newFile {
		return l.fs.SyncDir(logDir)
	}
	return nil
}

// maxSlots returns each file's latest slot time, for the checkpoint.
func (l *timerLog) maxSlots() map[int64]int64 {
	out := make(map[int64]int64, len(l.files))
	for _, f := range l.files {
		out[f.start] = f.maxSlot
	}
	return out
}

// deleteDelivered removes the leading files whose every unit's slot is
// before readTime, keeping the last file (it takes the next units). Run
// after a checkpoint: the wheel never reads a delivered slot again.
func (l *timerLog) deleteDelivered(readTime int64) error {
	for len(l.files) > 1 && l.files[0].maxSlot < readTime {
		f := l.files[0]
		if err := f.seg.Close(); err != nil {
			return err
		}
		if err := l.fs.Remove(f.seg.Name()); err != nil {
			return err
		}
		l.files = l.files[1:]
	}
	return nil
}

// diskBytes returns the size of the TimerLog files.
func (l *timerLog) diskBytes() int64 { return int64(len(l.files)) * l.fileSize }

func (l *timerLog) close() {
	for _, f := range l.files {
		_ = f.seg.Close()
	}
	l.files = nil
}
