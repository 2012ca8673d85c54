package engine

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
)

// PutResult describes a stored message (or batch).
type PutResult struct {
	// WroteOffset is the CommitLog offset of the (first) record.
	WroteOffset int64
	// WroteBytes is the size of the record(s).
	WroteBytes int32
	// QueueOffset is the ConsumeQueue index of the (first) message.
	QueueOffset int64
	// MsgNum is the number of messages stored.
	MsgNum int32
	// StoreTimestamp is the time assigned under the put lock.
	StoreTimestamp int64
	// StoreHost is the host written into the record.
	StoreHost netip.AddrPort
	// Topic and QueueID are where the message was stored: for a delayed
	// message, the schedule topic and its queue.
	Topic   string
	QueueID int32
}

// MsgID returns the offset message id of the (first) record.
func (r PutResult) MsgID() string { return record.OffsetMsgID(r.StoreHost, r.WroteOffset) }

// encoderPool holds the per-put encoders: each keeps its buffers, so a put
// allocates nothing once the pool is warm.
var encoderPool = sync.Pool{New: func() any { return new(record.Encoder) }}

// topicQueueKey identifies a ConsumeQueue; lookups with it do not allocate.
type topicQueueKey struct {
	topic   string
	queueID int32
}

// CommitLog is the append-only log of every message, in RocketMQ's format.
//
// One mutex (RocketMQ's putMessageLock) orders appends and assigns queue
// offsets; the wrote position is published after the bytes are in place,
// and readers only read below it.
type CommitLog struct {
	q         *mappedFileQueue
	cfg       *Config
	storeHost netip.AddrPort

	mu  sync.Mutex
	enc record.Encoder
	// topicQueueTable holds each queue's next queue offset behind a
	// pointer, so that a put hashes its topic once (read and advance).
	topicQueueTable map[topicQueueKey]*int64
	// slotCache remembers recent table slots by queue id, so that puts to
	// a few busy queues compare a topic instead of hashing it (map
	// hashing was 10-15 % of a 128-byte put). Cleared with the table.
	slotCache   [slotCacheSize]cachedSlot
	lastStoreTs int64
	blank       [record.BlankLength]byte
	// prefaultMark is the CommitLog offset at which the put path next
	// moves the write-prefaulted window ahead (see allocator.prefaultAhead).
	prefaultMark int64
	// rec is the state of a store of replicated records (records.go).
	rec commitRecords
}

func newCommitLog(fs backend.FS, dir string, cfg *Config) *CommitLog {
	q := newMappedFileQueue(fs, dir, cfg.CommitLogFileSize)
	// Under SYNC_FLUSH every put is followed by a sync of its pages. A page
	// written through the mapping is writable in the page tables, so that
	// sync's writeback must write-protect it (folio_mkclean: a TLB
	// shootdown across CPUs) and the next put into the same page faults
	// again (ext4_page_mkwrite); perf found 17 % of a 4 KiB SYNC_FLUSH put
	// loop's CPU there. pwrite leaves the mapping read-only and pays
	// neither: the process CPU per sync put fell by 35-50 % and the rate
	// rose 1.1-1.65x. It is automatic, not an option like RocketMQ's
	// transientStorePoolEnable (which is for ASYNC_FLUSH and adds a commit
	// step): the bytes are in the page cache before the put publishes
	// them, exactly as with the copy, so readers, the dispatcher, the
	// group commit and recovery are unchanged. ASYNC_FLUSH keeps the copy
	// into a write-prefaulted mapping: there the system call would be the
	// put's main cost (128 B async puts took 11-12 µs with pwrite against
	// 1.4-2.1 µs with the copy) for the rare sync's shootdowns
	// (BENCHMARKS.md, "What bounds the figures"). A store of replicated
	// records syncs every round its log store appends, as SYNC_FLUSH
	// syncs every group commit, whatever its flush type: it writes
	// through too.
	q.writeThrough = cfg.FlushDiskType == SyncFlush || cfg.records
	return &CommitLog{
		q:               q,
		cfg:             cfg,
		storeHost:       cfg.StoreHost,
		topicQueueTable: make(map[topicQueueKey]*int64),
	}
}

// MinOffset returns the offset of the oldest byte held.
func (c *CommitLog) MinOffset() int64 { return c.q.MinOffset() }

// MaxOffset returns the offset after the last published record: in a
// store of replicated records, after the last committed one.
func (c *CommitLog) MaxOffset() int64 { return c.limit(c.q.MaxOffset()) }

// FlushedWhere returns the offset up to which the CommitLog is synced.
func (c *CommitLog) FlushedWhere() int64 { return c.q.FlushedWhere() }

// FileSize returns the size of each CommitLog file.
func (c *CommitLog) FileSize() int64 { return c.q.fileSize }

// rollNextFile returns the start of the file after the one holding offset.
func (c *CommitLog) rollNextFile(offset int64) int64 {
	return offset + c.q.fileSize - offset%c.q.fileSize
}

// put appends one message. It returns the offset just past it, which a
// SyncFlush caller waits to see flushed. A non-nil o gives the store
// timestamp and host instead of the CommitLog's own (engineops.Ops.PutAs).
func (c *CommitLog) put(m *record.Message, o *origin) (PutResult, error) {
	m, err := redirectDelayed(m, len(c.cfg.DelayLevels))
	if err != nil {
		return PutResult{}, err
	}
	// Validation, property encoding and the body CRC need no lock: only
	// what assigns a position and copies bytes runs under it.
	enc := encoderPool.Get().(*record.Encoder)
	defer encoderPool.Put(enc)
	host := originHost(o, c.storeHost)
	p, err := enc.Prepare(m, host, c.cfg.MaxMessageSize)
	if err != nil {
		return PutResult{}, err
	}
	if err := c.checkFits(p.Size); err != nil {
		return PutResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	mf, pos, err := c.fileWithRoom(p.Size)
	if err != nil {
		return PutResult{}, err
	}
	ts := c.storeTime(o)
	key := topicQueueKey{m.Topic, m.QueueID}
	slot := c.queueOffset(key, m.SysFlag)
	var qoff int64
	if slot != nil {
		qoff = *slot
	}
	res := PutResult{WroteOffset: mf.fileFromOffset + pos, WroteBytes: int32(p.Size), QueueOffset: qoff,
		MsgNum: 1, StoreTimestamp: ts, StoreHost: host, Topic: m.Topic, QueueID: m.QueueID}
	head, body, tail := enc.Encode(p, record.Stamp{QueueOffset: qoff, PhysicalOffset: res.WroteOffset,
		StoreTimestamp: ts, StoreHost: host})
	end, err := mf.appendAt(pos, head, body, tail)
	if err != nil {
		return PutResult{}, err
	}
	mf.publish(end)
	mf.setStoreTimestamp(ts)
	c.prefaultAhead(mf, end)
	if slot != nil {
		*slot = qoff + 1
	}
	return res, nil
}

// putBatch appends messages for one topic and queue as consecutive records
// in one file, with consecutive queue offsets (o as for put).
func (c *CommitLog) putBatch(msgs []*record.Message, o *origin) (PutResult, error) {
	if err := checkBatch(msgs); err != nil {
		return PutResult{}, err
	}
	host := originHost(o, c.storeHost)
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, m := range msgs {
		p, err := c.enc.Prepare(m, host, c.cfg.MaxMessageSize)
		if err != nil {
			return PutResult{}, err
		}
		total += p.Size
	}
	if err := c.checkFits(total); err != nil {
		return PutResult{}, err
	}
	mf, pos, err := c.fileWithRoom(total)
	if err != nil {
		return PutResult{}, err
	}
	ts := c.storeTime(o)
	key := topicQueueKey{msgs[0].Topic, msgs[0].QueueID}
	slot := c.queueSlot(key)
	qoff := *slot
	res := PutResult{WroteOffset: mf.fileFromOffset + pos, WroteBytes: int32(total), QueueOffset: qoff,
		MsgNum: int32(len(msgs)), StoreTimestamp: ts, StoreHost: host, Topic: key.topic, QueueID: key.queueID}
	for i, m := range msgs {
		p, _ := c.enc.Prepare(m, host, c.cfg.MaxMessageSize)
		head, body, tail := c.enc.Encode(p, record.Stamp{QueueOffset: qoff + int64(i),
			PhysicalOffset: mf.fileFromOffset + pos, StoreTimestamp: ts, StoreHost: host})
		if pos, err = mf.appendAt(pos, head, body, tail); err != nil {
			return PutResult{}, err
		}
	}
	// The whole batch becomes visible at once.
	mf.publish(pos)
	mf.setStoreTimestamp(ts)
	c.prefaultAhead(mf, pos)
	*slot = qoff + int64(len(msgs))
	return res, nil
}

func checkBatch(msgs []*record.Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: no messages", ErrBatch)
	}
	for i, m := range msgs {
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			return fmt.Errorf("%w: message %d is for %s/%d, the batch for %s/%d",
				ErrBatch, i, m.Topic, m.QueueID, msgs[0].Topic, msgs[0].QueueID)
		}
		if m.HasProperty(record.PropertyDelayTimeLevel) {
			return fmt.Errorf("%w: message %d has a delay level; batches cannot be delayed", ErrBatch, i)
		}
		if t := record.TransactionType(m.SysFlag); t == record.TransactionPrepared || t == record.TransactionRollback {
			return fmt.Errorf("%w: message %d is a prepared or rollback transaction message", ErrBatch, i)
		}
	}
	return nil
}

// prefaultAhead moves the write-prefaulted window once every prefaultStep
// bytes. The caller holds mu.
func (c *CommitLog) prefaultAhead(mf *mappedFile, pos int64) {
	if off := mf.fileFromOffset + pos; off >= c.prefaultMark && c.q.alloc != nil {
		c.prefaultMark = off + prefaultStep
		c.q.alloc.prefaultAhead(mf, pos)
	}
}

// checkFits rejects records that could never fit in one file, which would
// otherwise roll files forever.
func (c *CommitLog) checkFits(size int) error {
	if int64(size)+record.BlankLength > c.q.fileSize {
		return fmt.Errorf("%w: %d bytes cannot fit in a CommitLog file of %d bytes", ErrMessageTooLarge, size, c.q.fileSize)
	}
	return nil
}

// fileWithRoom returns the file and position for size bytes, ending the
// current file with a BLANK record when they do not fit in it. A file always
// keeps BlankLength bytes for that record (RocketMQ's END_OF_FILE rule).
func (c *CommitLog) fileWithRoom(size int) (*mappedFile, int64, error) {
	mf, err := c.q.getLastMappedFile(0, true)
	if err != nil {
		return nil, 0, err
	}
	pos := mf.wrote.Load()
	maxBlank := mf.fileSize - pos
	if int64(size)+record.BlankLength <= maxBlank {
		return mf, pos, nil
	}
	if _, err := mf.appendAt(pos, record.PutBlank(c.blank[:], int32(maxBlank))); err != nil {
		return nil, 0, err
	}
	mf.publish(mf.fileSize)
	if mf, err = c.q.getLastMappedFile(0, true); err != nil {
		return nil, 0, err
	}
	return mf, 0, nil
}

// storeTime returns a store timestamp that never goes backwards along the
// log; abnormal recovery relies on that order. o, when set, replaces the
// clock.
func (c *CommitLog) storeTime(o *origin) int64 {
	ts := c.cfg.now()
	if o != nil {
		ts = o.StoreTimestamp
	}
	if ts < c.lastStoreTs {
		ts = c.lastStoreTs
	}
	c.lastStoreTs = ts
	return ts
}

// queueOffset returns the table slot holding the message's queue offset,
// which the put advances, or nil: prepared and rollback transaction records
// store 0 and take no place in the ConsumeQueue.
func (c *CommitLog) queueOffset(key topicQueueKey, sysFlag int32) *int64 {
	switch record.TransactionType(sysFlag) {
	case record.TransactionPrepared, record.TransactionRollback:
		return nil
	}
	return c.queueSlot(key)
}

// queueSlot returns key's entry in the queue-offset table, adding it at 0.
// The caller holds mu.
func (c *CommitLog) queueSlot(key topicQueueKey) *int64 {
	e := &c.slotCache[uint32(key.queueID)%slotCacheSize]
	if e.slot != nil && e.key.queueID == key.queueID && e.key.topic == key.topic {
		return e.slot
	}
	p := c.topicQueueTable[key]
	if p == nil {
		p = new(int64)
		c.topicQueueTable[key] = p
	}
	e.key, e.slot = key, p
	return p
}

// slotCacheSize is the number of queue-offset slots queueSlot remembers.
const slotCacheSize = 8

// cachedSlot is a queue-offset table entry remembered by queueSlot.
type cachedSlot struct {
	key  topicQueueKey
	slot *int64
}

// setTopicQueueTable replaces the queue-offset table after recovery.
func (c *CommitLog) setTopicQueueTable(t map[topicQueueKey]int64) {
	pt := make(map[topicQueueKey]*int64, len(t))
	for k, v := range t {
		pt[k] = &v
	}
	c.mu.Lock()
	c.topicQueueTable = pt
	clear(c.slotCache[:])
	c.mu.Unlock()
}

// removeQueue forgets a queue's offset (its ConsumeQueue was deleted).
func (c *CommitLog) removeQueue(topic string, queueID int32) {
	c.mu.Lock()
	delete(c.topicQueueTable, topicQueueKey{topic, queueID})
	clear(c.slotCache[:])
	c.mu.Unlock()
}

// redirectDelayed moves a message with a DELAY level to the schedule topic,
// keeping its destination in REAL_TOPIC / REAL_QID (RocketMQ's
// CommitLog.putMessage). It returns a copy; m is not modified.
func redirectDelayed(m *record.Message, maxLevel int) (*record.Message, error) {
	if !m.HasProperty(record.PropertyDelayTimeLevel) {
		return m, nil
	}
	lv := m.Property(record.PropertyDelayTimeLevel)
	if t := record.TransactionType(m.SysFlag); t != record.TransactionNotType && t != record.TransactionCommit {
		return m, nil
	}
	level, err := strconv.Atoi(lv)
	if err != nil {
		return nil, fmt.Errorf("%w: DELAY %q is not a number", ErrMessageIllegal, lv)
	}
	if level <= 0 {
		return m, nil
	}
	level = min(level, maxLevel)
	cp := *m
	src := m.Properties
	if m.EncodedProperties != nil {
		src = record.ParseProperties(m.EncodedProperties)
		cp.EncodedProperties = nil
	}
	cp.Properties = make(map[string]string, len(src)+3)
	for k, v := range src {
		cp.Properties[k] = v
	}
	cp.Properties[record.PropertyDelayTimeLevel] = strconv.Itoa(level)
	cp.Properties[record.PropertyRealTopic] = m.Topic
	cp.Properties[record.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	cp.Topic = record.ScheduleTopic
	cp.QueueID = int32(level - 1)
	return &cp, nil
}

// view returns size bytes at CommitLog offset off, holding a reference on
// the file; the caller releases mf.
func (c *CommitLog) view(off int64, size int) ([]byte, *mappedFile) {
	if c.rec.on && off+int64(size) > c.limit(off+int64(size)) {
		return nil, nil // not committed
	}
	mf := c.q.findMappedFileByOffset(off, off == 0)
	if mf == nil {
		return nil, nil
	}
	b, ok := mf.view(off-mf.fileFromOffset, int64(size))
	if !ok {
		return nil, nil
	}
	return b, mf
}

// data returns the published bytes from off to the end of its file, for
// the reput service. The caller releases mf.
func (c *CommitLog) data(off int64) ([]byte, *mappedFile) {
	mf := c.q.findMappedFileByOffset(off, off == 0)
	if mf == nil {
		return nil, nil
	}
	pos := off - mf.fileFromOffset
	b, ok := mf.view(pos, mf.wrote.Load()-pos)
	if !ok {
		return nil, nil
	}
	return b, mf
}

// recordAt returns the whole record starting at off, or nil.
func (c *CommitLog) recordAt(off int64) ([]byte, *mappedFile) {
	h, mf := c.view(off, 4)
	if h == nil {
		return nil, nil
	}
	size := int(int32(be32(h)))
	mf.release()
	if size < record.FixedOverhead {
		return nil, nil
	}
	return c.view(off, size)
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
