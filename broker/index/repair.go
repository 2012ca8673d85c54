package index

import (
	"bytes"
	"fmt"
)

// repair keeps what a crash left of the newest index file instead of
// deleting it (RocketMQ deletes it, and rocketstore then rebuilt the whole
// index from CommitLog offset 0, so that a restart after a crash took time
// in proportion to the store). The items that survive are those before the
// first one that is missing or does not fit: an all-zero item, a CommitLog
// offset below the previous item's (items are appended in CommitLog order)
// or outside the file's range, a negative time difference, or a previous
// item that is not the slot's newest older item. Pages written back but
// never synced may survive, torn, in any order: every item after the
// first misfit goes, the slots are rebuilt from the items kept, and the
// header is rewritten; the file is synced. Reconcile then replays the
// CommitLog from the last item kept. The cost is a pass over one file.
//
// It returns the number of items kept (firstIndex when none), or an error
// when the header itself did not survive (the caller deletes the file).
func (f *File) repair() (int32, error) {
	h := decodeHeader(f.seg.View(0, headerSize))
	if h.beginTimestamp <= 0 && h.beginPhyOffset == 0 && h.indexCount == 0 {
		return 0, fmt.Errorf("%w: %s: header never reached the disk", ErrCorrupt, f.name)
	}
	if h.beginPhyOffset < 0 || h.beginTimestamp < 0 {
		return 0, fmt.Errorf("%w: %s: header begins at commitlog %d, time %d", ErrCorrupt, f.name, h.beginPhyOffset, h.beginTimestamp)
	}
	slots := make([]int32, f.hashSlotNum)
	count := int32(firstIndex)
	lastPhy, lastDiff := h.beginPhyOffset, int32(0)
	for i := int32(firstIndex); int(i) < f.indexNum; i++ {
		b := f.seg.View(f.itemPos(i), itemSize)
		hash := int32(be.Uint32(b[itemOffKeyHash:]))
		phy := int64(be.Uint64(b[itemOffPhyOffset:]))
		diff := int32(be.Uint32(b[itemOffTimeDiff:]))
		prev := int32(be.Uint32(b[itemOffPrevIndex:]))
		if allZero(b) || hash < 0 || phy < lastPhy || diff < 0 || prev != slots[int(hash)%f.hashSlotNum] {
			break
		}
		slots[int(hash)%f.hashSlotNum] = i
		lastPhy, lastDiff = phy, diff
		count = i + 1
	}
	// Clear what follows the items kept, wherever a page of it survived;
	// most of it is a hole, compared a chunk at a time.
	if err := f.zeroFrom(f.itemPos(count)); err != nil {
		return 0, err
	}
	// The slots as the items kept make them, written where they differ.
	want := make([]byte, len(slots)*slotSize)
	used := int32(0)
	for s, head := range slots {
		if head != invalidIndex {
			used++
		}
		be.PutUint32(want[s*slotSize:], uint32(head))
	}
	for off := 0; off < len(want); off += repairChunk {
		end := min(off+repairChunk, len(want))
		if !bytes.Equal(f.seg.View(int64(headerSize+off), int64(end-off)), want[off:end]) {
			if _, err := f.seg.WriteAt(want[off:end], int64(headerSize+off)); err != nil {
				return 0, fmt.Errorf("index: write slots %s: %w", f.name, err)
			}
		}
	}
	f.h = header{beginTimestamp: h.beginTimestamp, beginPhyOffset: h.beginPhyOffset,
		endPhyOffset: lastPhy, endTimestamp: h.beginTimestamp + int64(lastDiff)*msPerSecond,
		hashSlotCount: used, indexCount: count}
	if err := f.writeHeader(); err != nil {
		return 0, err
	}
	if err := f.sync(); err != nil {
		return 0, err
	}
	return count, nil
}

// repairChunk is how much repair compares at a time.
const repairChunk = 64 << 10

// zeroFrom clears every non-zero chunk from pos to the end of the file.
func (f *File) zeroFrom(pos int64) error {
	zero := make([]byte, repairChunk)
	size := f.seg.Size()
	for off := pos; off < size; off += repairChunk {
		n := min(repairChunk, size-off)
		if bytes.Equal(f.seg.View(off, n), zero[:n]) {
			continue
		}
		if _, err := f.seg.WriteAt(zero[:n], off); err != nil {
			return fmt.Errorf("index: clear %s at %d: %w", f.name, off, err)
		}
	}
	return nil
}

// allZero reports whether an item is all zero bytes (never written).
func allZero(b []byte) bool {
	var zero [itemSize]byte
	return bytes.Equal(b, zero[:])
}
