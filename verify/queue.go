package verify

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

// unitSize is the size of a ConsumeQueue unit:
//
//	0 commitlog offset int64 | 8 size int32 | 12 tagsCode int64
const unitSize = 20

// unit is one ConsumeQueue entry.
type unit struct {
	offset   int64
	size     int32
	tagsCode int64
}

// blankUnit fills a queue's first file up to its first index when that
// index is not 0 (RocketMQ's fillPreBlank).
var blankUnit = unit{offset: 0, size: math.MaxInt32, tagsCode: 0}

func decodeUnit(b []byte) unit {
	return unit{
		offset:   int64(binary.BigEndian.Uint64(b)),
		size:     int32(binary.BigEndian.Uint32(b[8:])),
		tagsCode: int64(binary.BigEndian.Uint64(b[12:])),
	}
}

// valid is RocketMQ's test for a real entry.
func (u unit) valid() bool { return u.offset >= 0 && u.size > 0 }

func (u unit) String() string {
	return fmt.Sprintf("(offset %d, size %d, tagsCode %d)", u.offset, u.size, u.tagsCode)
}

// queue is one ConsumeQueue. Unit indexes run from base (the first file's
// start) through prefix (after the blank fillers) to end (the first zero
// unit).
type queue struct {
	topic string
	id    int32
	files *fileQueue

	base, prefix, end int64
	// matched has bit i-base set when a CommitLog record matched unit i.
	matched []uint64
}

func (q *queue) unit(idx int64) (unit, bool) {
	if idx < q.prefix || idx >= q.end {
		return unit{}, false
	}
	f, _, ok := q.files.find(idx * unitSize)
	if !ok {
		return unit{}, false
	}
	return decodeUnit(f.seg.View(idx*unitSize-f.from, unitSize)), true
}

// location returns the file and byte offset of unit idx.
func (q *queue) location(idx int64) (string, int64) {
	f, _, _ := q.files.find(idx * unitSize)
	return f.name, idx*unitSize - f.from
}

func (q *queue) mark(idx int64) {
	i := idx - q.base
	q.matched[i/64] |= 1 << (i % 64)
}

func (q *queue) isMarked(idx int64) bool {
	i := idx - q.base
	return q.matched[i/64]&(1<<(i%64)) != 0
}

// openQueues opens consumequeue/{topic}/{queueId}/ and reads every queue's
// extent.
func (c *checker) openQueues() error {
	topics, err := c.fs.ListDirs(consumeQueueDir)
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify: list %s: %w", consumeQueueDir, err)
	}
	for _, topic := range topics {
		dir := path.Join(consumeQueueDir, topic)
		ids, err := c.fs.ListDirs(dir)
		if err != nil {
			return fmt.Errorf("verify: list %s: %w", dir, err)
		}
		for _, id := range ids {
			if err := c.openQueue(topic, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) openQueue(topic, id string) error {
	dir := path.Join(consumeQueueDir, topic, id)
	qid, err := strconv.ParseInt(id, 10, 32)
	if err != nil || qid < 0 || strconv.Itoa(int(qid)) != id {
		c.violation(KindLayout, dir, 0, "directory name is not a queue id")
		return nil
	}
	files, err := c.openFileQueue(dir, c.opts.ConsumeQueueUnits*unitSize, unitSize)
	if err != nil {
		return err
	}
	q := &queue{topic: topic, id: int32(qid), files: files}
	if c.queues[topic] == nil {
		c.queues[topic] = make(map[int32]*queue)
	}
	c.queues[topic][q.id] = q
	c.order = append(c.order, q)
	c.rep.Queues++
	c.rep.ConsumeQueueFiles += len(files.files)
	c.loadUnits(q)
	q.matched = make([]uint64, (q.end-q.base+63)/64)
	return nil
}

// loadUnits finds the queue's extent and reports units that can be judged
// without the CommitLog: blank fillers out of place, invalid units, and
// anything after the end of the data.
func (c *checker) loadUnits(q *queue) {
	q.base = q.files.minOffset() / unitSize
	q.prefix, q.end = q.base, q.base
	ended := false
	for fi, f := range q.files.files {
		b := f.seg.View(0, q.files.size)
		if ended {
			if j := firstNonZero(b); j >= 0 {
				c.violation(KindGap, f.name, int64(j), "units after the end of the queue's data at index %d", q.end)
			}
			continue
		}
		for pos := int64(0); pos < int64(len(b)); pos += unitSize {
			idx := (f.from + pos) / unitSize
			u := decodeUnit(b[pos:])
			switch {
			case u == unit{}:
				ended = true
				if j := firstNonZero(b[pos:]); j >= 0 {
					c.violation(KindGap, f.name, pos+int64(j), "units after the end of the queue's data at index %d", idx)
				}
			case u == blankUnit && fi == 0 && idx == q.prefix:
				q.prefix++
			case u == blankUnit:
				c.violation(KindUnit, f.name, pos, "blank filler unit at index %d after real units", idx)
			case !u.valid():
				c.violation(KindUnit, f.name, pos, "invalid unit %v at index %d", u, idx)
			default:
				c.rep.Units++
			}
			if ended {
				break
			}
			q.end = idx + 1
		}
	}
}

// checkUnits reports every unit that no CommitLog record matched, saying
// why it does not match.
func (c *checker) checkUnits() {
	for _, q := range c.order {
		for idx := q.prefix; idx < q.end; idx++ {
			if q.isMarked(idx) {
				continue
			}
			if u, _ := q.unit(idx); u.valid() && u != blankUnit {
				c.checkUnit(q, idx, u)
			}
		}
		c.progress.advance(int64(len(q.files.files)) * q.files.size)
	}
}

// checkUnit explains why unit idx of q matched no record.
func (c *checker) checkUnit(q *queue, idx int64, u unit) {
	name, at := q.location(idx)
	if u.offset < c.log.files.firstNamed {
		// RocketMQ deletes expired CommitLog files before the units that
		// point into them; such units are stale, not wrong.
		return
	}
	if c.log.inDamage(u.offset) {
		return // the damaged record's unit: the damage is reported
	}
	f, i, ok := c.log.files.find(u.offset)
	if !ok || u.offset+int64(u.size) > c.log.validEnd[i] {
		c.violation(KindUnit, name, at, "unit %d %v points at commitlog data that is missing or could not be checked", idx, u)
		return
	}
	info, err := record.Check(f.seg.View(u.offset-f.from, c.log.validEnd[i]-u.offset), u.offset, false)
	switch {
	case err != nil:
		c.violation(KindUnit, name, at, "unit %d %v does not point at a record: %v", idx, u, err)
		return
	case info.Blank:
		c.violation(KindUnit, name, at, "unit %d %v points at a BLANK record", idx, u)
		return
	}
	diffs := c.unitDiffs(q, u, &info)
	if info.QueueOffset != idx {
		if other, ok := q.unit(info.QueueOffset); ok && other.offset == u.offset && len(diffs) == 0 {
			c.violation(KindDuplicate, name, at, "units %d and %d both point at the record at %d", idx, info.QueueOffset, u.offset)
			return
		}
		diffs = append(diffs, fmt.Sprintf("record has queue offset %d", info.QueueOffset))
	}
	if len(diffs) == 0 {
		diffs = append(diffs, "the record matches but the commitlog scan did not reach it")
	}
	c.violation(KindUnit, name, at, "unit %d %v: %s", idx, u, strings.Join(diffs, "; "))
}

// unitDiffs lists how the record differs from what unit u of q promises,
// queue offset aside.
func (c *checker) unitDiffs(q *queue, u unit, info *record.Info) []string {
	var d []string
	if string(info.Topic) != q.topic || info.QueueID != q.id {
		d = append(d, fmt.Sprintf("record is for %s/%d", info.Topic, info.QueueID))
	}
	if info.Size != u.size {
		d = append(d, fmt.Sprintf("record size is %d", info.Size))
	}
	if tc := c.tagsCode(info); tc != u.tagsCode {
		d = append(d, fmt.Sprintf("record tagsCode is %d", tc))
	}
	if !dispatchable(info.SysFlag) {
		d = append(d, "record is a prepared or rolled-back transaction")
	}
	return d
}

// tagsCode computes a record's ConsumeQueue tagsCode (spec section 3): the
// Java hash of TAGS, or for a delayed message the deliver time.
func (c *checker) tagsCode(info *record.Info) int64 {
	if string(info.Topic) == record.ScheduleTopic {
		if lv, ok := record.PropertyValue(info.Properties, record.PropertyDelayTimeLevel); ok {
			return c.deliverTime(string(lv), info.StoreTimestamp)
		}
	}
	tags, _ := record.PropertyValue(info.Properties, record.PropertyTags)
	return record.TagsCode(string(tags))
}

// deliverTime is RocketMQ's computeDeliverTimestamp: the store time plus
// the level's delay (levels above the maximum count as the maximum); an
// unknown level gives store time + 1 s.
func (c *checker) deliverTime(level string, storeTs int64) int64 {
	lv, err := strconv.Atoi(level)
	if err != nil || lv <= 0 || len(c.opts.DelayLevels) == 0 {
		return storeTs + 1000
	}
	lv = min(lv, len(c.opts.DelayLevels))
	return storeTs + c.opts.DelayLevels[lv-1].Milliseconds()
}
