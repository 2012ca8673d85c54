package engine

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
)

// consumeQueueTable maps topic → queue id → ConsumeQueue. Readers load an
// immutable snapshot; the dispatcher and recovery add queues under mu
// (copy on write: queues are created rarely and read on every get).
type consumeQueueTable struct {
	mu sync.Mutex
	m  atomic.Pointer[cqSnapshot]
}

// cqSnapshot is one immutable state of the table: the map for lookups and
// the same queues ordered by topic and queue id for passes over all of
// them. The fixed order makes a flush or recovery issue its file
// operations in the same sequence every time, so that a crash test's seed
// (a power cut at the k-th write) replays the same crash.
type cqSnapshot struct {
	m      map[string]map[int32]*consumeQueue
	sorted []*consumeQueue
}

func (t *consumeQueueTable) snapshot() map[string]map[int32]*consumeQueue {
	if p := t.m.Load(); p != nil {
		return p.m
	}
	return nil
}

// store publishes next with its ordered list.
func (t *consumeQueueTable) store(next map[string]map[int32]*consumeQueue) {
	var sorted []*consumeQueue
	for _, qs := range next {
		for _, cq := range qs {
			sorted = append(sorted, cq)
		}
	}
	slices.SortFunc(sorted, func(a, b *consumeQueue) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return cmp.Compare(a.queueID, b.queueID)
	})
	t.m.Store(&cqSnapshot{m: next, sorted: sorted})
}

// find returns the queue or nil. The lookup does not allocate.
func (t *consumeQueueTable) find(topic string, queueID int32) *consumeQueue {
	return t.snapshot()[topic][queueID]
}

// findOrCreate returns the queue for a dispatched record, creating it.
func (t *consumeQueueTable) findOrCreate(s *Store, topic []byte, queueID int32) (*consumeQueue, error) {
	if cq := t.snapshot()[string(topic)][queueID]; cq != nil {
		return cq, nil
	}
	name := string(topic)
	if err := checkTopicName(name); err != nil {
		return nil, err
	}
	cq := s.newConsumeQueue(name, queueID)
	t.add(cq)
	return cq, nil
}

func (s *Store) newConsumeQueue(topic string, queueID int32) *consumeQueue {
	cq := newConsumeQueue(s.fs, consumeQueueDir, topic, queueID, s.cfg.ConsumeQueueUnits)
	cq.noMaxPhysicOffsetCheck = s.cfg.hooks.NoMaxPhysicOffsetCheck
	cq.q.deferDirSync = true
	cq.q.noDeferredDirSync = s.cfg.hooks.NoDeferredDirSync
	cq.q.releaseFaults = &s.health.release
	cq.noReplayedUnitCheck = s.cfg.hooks.NoReplayedUnitCheck
	cq.keepEmptyLastFile = s.cfg.hooks.KeepEmptyLastQueueFile
	cq.noStartupUnitCheck = s.cfg.hooks.NoStartupUnitCheck
	s.staging.attach(cq) // during abnormal recovery's scan only
	return cq
}

// checkTopicName refuses topics that cannot be a directory name.
func checkTopicName(topic string) error {
	if topic == "" || topic == "." || topic == ".." || path.Base(topic) != topic {
		return fmt.Errorf("%w: topic %q cannot name a consume queue directory", ErrMessageIllegal, topic)
	}
	return nil
}

func (t *consumeQueueTable) add(cq *consumeQueue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.snapshot()
	next := make(map[string]map[int32]*consumeQueue, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	qs := make(map[int32]*consumeQueue, len(old[cq.topic])+1)
	for k, v := range old[cq.topic] {
		qs[k] = v
	}
	qs[cq.queueID] = cq
	next[cq.topic] = qs
	t.store(next)
}

// removeTopic drops topic's queues from the table and returns them.
func (t *consumeQueueTable) removeTopic(topic string) []*consumeQueue {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.snapshot()
	qs := old[topic]
	if len(qs) == 0 {
		return nil
	}
	next := make(map[string]map[int32]*consumeQueue, len(old))
	for k, v := range old {
		if k != topic {
			next[k] = v
		}
	}
	t.store(next)
	out := make([]*consumeQueue, 0, len(qs))
	for _, cq := range qs {
		out = append(out, cq)
	}
	slices.SortFunc(out, func(a, b *consumeQueue) int { return cmp.Compare(a.queueID, b.queueID) })
	return out
}

// all calls fn for every queue, in topic and queue id order.
func (t *consumeQueueTable) all(fn func(*consumeQueue) error) error {
	p := t.m.Load()
	if p == nil {
		return nil
	}
	var errs []error
	for _, cq := range p.sorted {
		if err := fn(cq); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *consumeQueueTable) shutdownAll() {
	t.all(func(cq *consumeQueue) error { cq.q.shutdown(); return nil })
}

// loadConsumeQueues opens consumequeue/{topic}/{queueId}/ directories.
func (s *Store) loadConsumeQueues() error {
	topics, err := s.fs.ListDirs(consumeQueueDir)
	if errors.Is(err, backend.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", consumeQueueDir, err)
	}
	for _, topic := range topics {
		ids, err := s.fs.ListDirs(path.Join(consumeQueueDir, topic))
		if err != nil {
			return fmt.Errorf("list %s: %w", path.Join(consumeQueueDir, topic), err)
		}
		for _, id := range ids {
			qid, err := strconv.ParseInt(id, 10, 32)
			if err != nil || qid < 0 {
				return fmt.Errorf("%w: consume queue directory %s/%s/%s is not a queue id", ErrCorruptStore, consumeQueueDir, topic, id)
			}
			cq := s.newConsumeQueue(topic, int32(qid))
			if err := cq.q.load(s.cfg.Logger); err != nil {
				return err
			}
			s.queues.add(cq)
		}
	}
	return nil
}

// commitLogReader adapts the CommitLog to dispatch.Log. With SyncFlush it
// ends at the flushed position rather than the written one, so that a
// consumer never receives a message that a power cut could take back
// (RocketMQ #8239: consumers of a SYNC_FLUSH store read unflushed data, and
// after a crash skipped the messages written in its place; 5.x fixed it the
// same way).
type commitLogReader struct{ c *CommitLog }

func (r commitLogReader) Data(off int64) ([]byte, dispatch.Releaser) {
	b, mf := r.c.data(off)
	if end := r.MaxOffset(); off+int64(len(b)) > end {
		b = b[:max(0, end-off)]
	}
	if len(b) == 0 {
		if mf != nil {
			mf.release()
		}
		return nil, nil
	}
	return b, mf
}

func (r commitLogReader) MinOffset() int64             { return r.c.MinOffset() }
func (r commitLogReader) RollNextFile(off int64) int64 { return r.c.rollNextFile(off) }

// MaxOffset is the end of what may be dispatched.
func (r commitLogReader) MaxOffset() int64 {
	end := r.c.dispatchLimit(r.c.q.MaxOffset())
	if r.c.cfg.FlushDiskType == SyncFlush {
		return min(end, r.c.q.FlushedWhere())
	}
	return end
}

// Release implements dispatch.Releaser.
func (mf *mappedFile) Release() { mf.release() }
