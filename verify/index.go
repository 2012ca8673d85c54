package verify

import (
	"encoding/binary"
	"path"
	"strings"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

// IndexFile layout (RocketMQ's; see package index): a 40-byte header with
// endPhyOffset at 24 and indexCount at 36, hashSlotNum 4-byte slots, then
// 20-byte items holding the CommitLog offset at 4. Item 0 is unused.
const (
	indexDir          = "index"
	indexHeaderSize   = 40
	indexItemSize     = 20
	indexSlotsPerItem = 4 // RocketMQ's default: maxIndexNum = 4 × maxHashSlotNum
	indexNameDigits   = 17
)

// checkIndex checks that every IndexFile entry points at the start of a
// record inside the CommitLog: an entry past the end points at a record
// recovery cut off, which a new record at the same offset would then be
// taken for. Entries below the CommitLog minimum (their
// records deleted by retention) are fine.
func (c *checker) checkIndex() {
	names, err := c.fs.List(indexDir)
	if err != nil {
		return // no index
	}
	names = c.ignoreForeign(indexDir, names, func(n string) bool {
		return strings.HasSuffix(n, backend.TempSuffix) || strings.HasSuffix(n, backend.BackupSuffix) || isIndexName(n)
	})
	for _, n := range names {
		if isIndexName(n) {
			c.checkIndexFile(path.Join(indexDir, n))
		}
	}
}

// isIndexName reports whether name is an IndexFile's: the 17 digits of its
// creation time, yyyyMMddHHmmssSSS (RocketMQ's
// UtilAll.timeMillisToHumanString).
func isIndexName(name string) bool {
	if len(name) != indexNameDigits {
		return false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

func (c *checker) checkIndexFile(name string) {
	seg, err := c.fs.Open(name)
	if err != nil {
		c.violation(KindIndex, name, 0, "cannot open: %v", err)
		return
	}
	defer seg.Close()
	size := seg.Size()
	per := int64(indexItemSize*indexSlotsPerItem + 4)
	if size < indexHeaderSize || (size-indexHeaderSize)%per != 0 {
		c.violation(KindIndex, name, 0, "%d bytes is not an index file of RocketMQ's default geometry", size)
		return
	}
	slots := (size - indexHeaderSize) / per
	items := slots * indexSlotsPerItem
	h := seg.View(0, indexHeaderSize)
	count := int64(int32(binary.BigEndian.Uint32(h[36:])))
	if count < 1 || count > items {
		c.violation(KindIndex, name, 36, "indexCount %d outside 1..%d", count, items)
		return
	}
	base := indexHeaderSize + slots*4
	c.checkIndexSlots(name, seg, slots, count, base)
	for i := int64(1); i < count; i++ {
		pos := base + i*indexItemSize
		phy := int64(binary.BigEndian.Uint64(seg.View(pos+4, 8)))
		switch {
		case phy >= c.rep.MaxOffset:
			c.violation(KindIndex, name, pos, "entry %d points at commitlog offset %d, at or past the commitlog end %d", i, phy, c.rep.MaxOffset)
		case phy >= c.rep.MinOffset && !c.recordStartsAt(phy):
			c.violation(KindIndex, name, pos, "entry %d points at commitlog offset %d, where no record starts", i, phy)
		}
	}
}

// recordStartsAt reports whether a valid record starts at CommitLog offset
// off.
func (c *checker) recordStartsAt(off int64) bool {
	f, _, ok := c.log.files.find(off)
	if !ok {
		return false
	}
	pos := off - f.from
	_, err := record.Check(f.seg.View(pos, c.log.files.size-pos), off, false)
	return err == nil
}

// checkIndexSlots checks the hash slots of an IndexFile: each is 0 (no
// key) or heads the chain of its keys, an item written (at most
// indexCount: a put killed between its slot and header writes leaves the
// slot at the item the header does not count yet) whose key hash falls in
// that slot. Garbage there hides the keys of those chains; it is reported
// once a file, with the number of such slots and the first.
func (c *checker) checkIndexSlots(name string, seg backend.Segment, slots, count, base int64) {
	items := slots * indexSlotsPerItem
	bad, first, firstItem := 0, int64(-1), int64(0)
	for s := range slots {
		v := int64(int32(binary.BigEndian.Uint32(seg.View(indexHeaderSize+s*4, 4))))
		if v == 0 {
			continue
		}
		ok := v >= 1 && v <= count && v < items
		if ok {
			hash := int64(int32(binary.BigEndian.Uint32(seg.View(base+v*indexItemSize, 4))))
			ok = hash%slots == s
		}
		if !ok {
			if bad == 0 {
				first, firstItem = s, v
			}
			bad++
		}
	}
	if bad > 0 {
		c.violation(KindIndex, name, indexHeaderSize+first*4,
			"%d hash slots hold no item of their keys (the first, slot %d, holds item %d of %d): the keys of their chains cannot be found",
			bad, first, firstItem, count-1)
	}
}
