package index

import (
	"encoding/binary"
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

var be = binary.BigEndian

// header is an index file's header, kept in memory and written after each
// put.
type header struct {
	beginTimestamp, endTimestamp int64
	beginPhyOffset, endPhyOffset int64
	hashSlotCount, indexCount    int32
}

func (h *header) encode(b []byte) {
	be.PutUint64(b[offBeginTimestamp:], uint64(h.beginTimestamp))
	be.PutUint64(b[offEndTimestamp:], uint64(h.endTimestamp))
	be.PutUint64(b[offBeginPhyOffset:], uint64(h.beginPhyOffset))
	be.PutUint64(b[offEndPhyOffset:], uint64(h.endPhyOffset))
	be.PutUint32(b[offHashSlotCount:], uint32(h.hashSlotCount))
	be.PutUint32(b[offIndexCount:], uint32(h.indexCount))
}

func decodeHeader(b []byte) header {
	return header{
		beginTimestamp: int64(be.Uint64(b[offBeginTimestamp:])),
		endTimestamp:   int64(be.Uint64(b[offEndTimestamp:])),
		beginPhyOffset: int64(be.Uint64(b[offBeginPhyOffset:])),
		endPhyOffset:   int64(be.Uint64(b[offEndPhyOffset:])),
		hashSlotCount:  int32(be.Uint32(b[offHashSlotCount:])),
		indexCount:     int32(be.Uint32(b[offIndexCount:])),
	}
}

// File is one IndexFile. It is not safe for concurrent use by itself; the
// Service serialises writers against readers.
type File struct {
	name        string
	seg         backend.Segment
	hashSlotNum int
	indexNum    int
	h           header
	hbuf        [headerSize]byte
}

// createFile makes a new index file continuing from the previous file's
// end offset and timestamp (0 for the first file).
func createFile(fs backend.FS, name string, hashSlotNum, indexNum int, endPhy, endTs int64) (*File, error) {
	seg, err := fs.Create(name, fileSize(hashSlotNum, indexNum))
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", name, err)
	}
	f := &File{name: name, seg: seg, hashSlotNum: hashSlotNum, indexNum: indexNum,
		h: header{indexCount: firstIndex}}
	if endPhy > 0 {
		f.h.beginPhyOffset, f.h.endPhyOffset = endPhy, endPhy
	}
	if endTs > 0 {
		f.h.beginTimestamp, f.h.endTimestamp = endTs, endTs
	}
	if err := f.writeHeader(); err != nil {
		seg.Close()
		return nil, err
	}
	return f, nil
}

// openFile opens an existing index file, checking its geometry.
func openFile(fs backend.FS, name string, hashSlotNum, indexNum int) (*File, error) {
	seg, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", name, err)
	}
	if want := fileSize(hashSlotNum, indexNum); seg.Size() != want {
		seg.Close()
		return nil, fmt.Errorf("%w: %s is %d bytes, the configured geometry needs %d", ErrCorrupt, name, seg.Size(), want)
	}
	f := &File{name: name, seg: seg, hashSlotNum: hashSlotNum, indexNum: indexNum}
	f.h = decodeHeader(seg.View(0, headerSize))
	if f.h.indexCount < firstIndex || int(f.h.indexCount) > indexNum {
		f.h.indexCount = firstIndex // torn or zero header: nothing usable
	}
	return f, nil
}

// check reports an error naming what is wrong when the file holds
// garbage: a header whose fields contradict each other, or an entry
// pointing outside the file's CommitLog range, at an item after itself,
// or before the file's first timestamp, or a hash slot that heads no chain
// of its keys. A zero header (a file created
// just before a crash) is an empty file, not garbage. It reads the items
// written, not the CommitLog.
func (f *File) check() error {
	raw := decodeHeader(f.seg.View(0, headerSize))
	if raw == (header{}) {
		return nil
	}
	h := raw
	switch {
	case h.indexCount < firstIndex || int(h.indexCount) > f.indexNum:
		return fmt.Errorf("%w: %s: indexCount %d outside %d..%d", ErrCorrupt, f.name, h.indexCount, firstIndex, f.indexNum)
	case h.beginPhyOffset < 0 || h.endPhyOffset < h.beginPhyOffset:
		return fmt.Errorf("%w: %s: commitlog range %d..%d", ErrCorrupt, f.name, h.beginPhyOffset, h.endPhyOffset)
	case h.beginTimestamp < 0 || h.endTimestamp < h.beginTimestamp:
		return fmt.Errorf("%w: %s: time range %d..%d", ErrCorrupt, f.name, h.beginTimestamp, h.endTimestamp)
	case h.hashSlotCount < 0 || h.hashSlotCount >= h.indexCount:
		return fmt.Errorf("%w: %s: hashSlotCount %d with %d items", ErrCorrupt, f.name, h.hashSlotCount, h.indexCount-1)
	}
	for i := int32(firstIndex); i < h.indexCount; i++ {
		b := f.seg.View(f.itemPos(i), itemSize)
		phy := int64(be.Uint64(b[itemOffPhyOffset:]))
		diff := int32(be.Uint32(b[itemOffTimeDiff:]))
		prev := int32(be.Uint32(b[itemOffPrevIndex:]))
		if phy < h.beginPhyOffset || phy > h.endPhyOffset || diff < 0 || prev < 0 || prev >= i {
			return fmt.Errorf("%w: %s: item %d (commitlog offset %d, time diff %d, previous item %d) outside the file's range %d..%d",
				ErrCorrupt, f.name, i, phy, diff, prev, h.beginPhyOffset, h.endPhyOffset)
		}
	}
	// Each hash slot is empty or heads its keys' chain: an item written
	// (at most indexCount: a put killed between its slot and header
	// writes leaves the slot at the item the header does not count yet)
	// whose key hash falls in that slot. Garbage there hides the keys of
	// those chains.
	for s := range f.hashSlotNum {
		v := f.readInt(headerSize + int64(s)*slotSize)
		if v == invalidIndex {
			continue
		}
		if v < firstIndex || v > h.indexCount || int(v) >= f.indexNum ||
			int(f.readInt(f.itemPos(v)+itemOffKeyHash))%f.hashSlotNum != s {
			return fmt.Errorf("%w: %s: hash slot %d holds item %d, not one of its keys' (%d items)", ErrCorrupt, f.name, s, v, h.indexCount-1)
		}
	}
	return nil
}

func (f *File) writeHeader() error {
	f.h.encode(f.hbuf[:])
	if _, err := f.seg.WriteAt(f.hbuf[:], 0); err != nil {
		return fmt.Errorf("index: write header %s: %w", f.name, err)
	}
	return nil
}

// IsFull reports whether the file has no room for another item.
func (f *File) IsFull() bool { return int(f.h.indexCount) >= f.indexNum }

// keyHash is RocketMQ's indexKeyHashMethod: |String.hashCode|, 0 for
// Integer.MIN_VALUE.
func keyHash(key string) int32 {
	h := record.JavaStringHashCode(key)
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

func (f *File) slotPos(hash int32) int64 {
	return headerSize + int64(int(hash)%f.hashSlotNum)*slotSize
}

func (f *File) itemPos(i int32) int64 {
	return headerSize + int64(f.hashSlotNum)*slotSize + int64(i)*itemSize
}

func (f *File) readInt(pos int64) int32 { return int32(be.Uint32(f.seg.View(pos, 4))) }

// putKey adds key → phyOffset (RocketMQ's IndexFile.putKey). It returns
// false when the file is full.
func (f *File) putKey(key string, phyOffset, storeTs int64) (bool, error) {
	if f.IsFull() {
		return false, nil
	}
	hash := keyHash(key)
	sp := f.slotPos(hash)
	slot := f.readInt(sp)
	if slot <= invalidIndex || slot > f.h.indexCount {
		slot = invalidIndex
	}
	timeDiff := int64(0)
	if f.h.beginTimestamp > 0 {
		timeDiff = max(0, min((storeTs-f.h.beginTimestamp)/msPerSecond, maxInt32))
	}
	var item [itemSize]byte
	be.PutUint32(item[itemOffKeyHash:], uint32(hash))
	be.PutUint64(item[itemOffPhyOffset:], uint64(phyOffset))
	be.PutUint32(item[itemOffTimeDiff:], uint32(timeDiff))
	be.PutUint32(item[itemOffPrevIndex:], uint32(slot))
	if _, err := f.seg.WriteAt(item[:], f.itemPos(f.h.indexCount)); err != nil {
		return false, fmt.Errorf("index: write item %s: %w", f.name, err)
	}
	var sb [slotSize]byte
	be.PutUint32(sb[:], uint32(f.h.indexCount))
	if _, err := f.seg.WriteAt(sb[:], sp); err != nil {
		return false, fmt.Errorf("index: write slot %s: %w", f.name, err)
	}
	if f.h.indexCount <= firstIndex {
		f.h.beginPhyOffset, f.h.beginTimestamp = phyOffset, storeTs
	}
	if slot == invalidIndex {
		f.h.hashSlotCount++
	}
	f.h.indexCount++
	f.h.endPhyOffset, f.h.endTimestamp = phyOffset, storeTs
	return true, f.writeHeader()
}

// isTimeMatched reports whether [begin, end] overlaps the file's range.
func (f *File) isTimeMatched(begin, end int64) bool {
	return (begin < f.h.beginTimestamp && end > f.h.endTimestamp) ||
		(begin >= f.h.beginTimestamp && begin <= f.h.endTimestamp) ||
		(end >= f.h.beginTimestamp && end <= f.h.endTimestamp)
}

// selectPhyOffsets appends the offsets stored for key with a store time in
// [begin, end], newest first, until out holds maxNum (RocketMQ's
// selectPhyOffset, chain-stop rules included).
func (f *File) selectPhyOffsets(out []int64, key string, maxNum int, begin, end int64) []int64 {
	hash := keyHash(key)
	slot := f.readInt(f.slotPos(hash))
	if slot <= invalidIndex || slot > f.h.indexCount || f.h.indexCount <= firstIndex {
		return out
	}
	for next := slot; len(out) < maxNum; {
		b := f.seg.View(f.itemPos(next), itemSize)
		hashRead := int32(be.Uint32(b[itemOffKeyHash:]))
		phy := int64(be.Uint64(b[itemOffPhyOffset:]))
		timeDiff := int64(int32(be.Uint32(b[itemOffTimeDiff:])))
		prev := int32(be.Uint32(b[itemOffPrevIndex:]))
		if timeDiff < 0 {
			break
		}
		ts := f.h.beginTimestamp + timeDiff*msPerSecond
		if hashRead == hash && ts >= begin && ts <= end {
			out = append(out, phy)
		}
		if prev <= invalidIndex || prev > f.h.indexCount || prev == next || ts < begin {
			break
		}
		next = prev
	}
	return out
}

// sync makes the file durable.
func (f *File) sync() error {
	if err := f.seg.Sync(0, f.seg.Size()); err != nil {
		return fmt.Errorf("index: sync %s: %w", f.name, err)
	}
	return nil
}

// BeginTimestamp returns the store time of the oldest entry.
func (f *File) BeginTimestamp() int64 { return f.h.beginTimestamp }

// EndTimestamp returns the store time of the newest entry.
func (f *File) EndTimestamp() int64 { return f.h.endTimestamp }

// EndPhyOffset returns the CommitLog offset of the newest entry.
func (f *File) EndPhyOffset() int64 { return f.h.endPhyOffset }

// IndexCount returns the next item number (1 + entries).
func (f *File) IndexCount() int32 { return f.h.indexCount }

// Name returns the file's path.
func (f *File) Name() string { return f.name }

// truncateFrom removes the newest items whose CommitLog offset is at or
// past clMax (their records are gone), newest first, so that each removed
// item is the head of its slot's chain: the slot goes back to the item's
// predecessor. It returns how many items it removed; the caller syncs.
func (f *File) truncateFrom(clMax int64) (int, error) {
	n := 0
	for f.h.indexCount > firstIndex {
		i := f.h.indexCount - 1
		b := f.seg.View(f.itemPos(i), itemSize)
		if int64(be.Uint64(b[itemOffPhyOffset:])) < clMax {
			break
		}
		hash := int32(be.Uint32(b[itemOffKeyHash:]))
		prev := int32(be.Uint32(b[itemOffPrevIndex:]))
		sp := f.slotPos(hash)
		if hash >= 0 && f.readInt(sp) == i {
			if prev < invalidIndex || prev >= i {
				prev = invalidIndex
			}
			var sb [slotSize]byte
			be.PutUint32(sb[:], uint32(prev))
			if _, err := f.seg.WriteAt(sb[:], sp); err != nil {
				return n, fmt.Errorf("index: write slot %s: %w", f.name, err)
			}
			if prev == invalidIndex && f.h.hashSlotCount > 0 {
				f.h.hashSlotCount--
			}
		}
		var zero [itemSize]byte
		if _, err := f.seg.WriteAt(zero[:], f.itemPos(i)); err != nil {
			return n, fmt.Errorf("index: clear item %s: %w", f.name, err)
		}
		f.h.indexCount--
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if f.h.indexCount > firstIndex {
		b := f.seg.View(f.itemPos(f.h.indexCount-1), itemSize)
		f.h.endPhyOffset = int64(be.Uint64(b[itemOffPhyOffset:]))
		f.h.endTimestamp = f.h.beginTimestamp + int64(int32(be.Uint32(b[itemOffTimeDiff:])))*msPerSecond
	} else {
		f.h.endPhyOffset, f.h.endTimestamp = min(f.h.beginPhyOffset, clMax), f.h.beginTimestamp
	}
	return n, f.writeHeader()
}
