package engine

import (
	"encoding/json"
	"fmt"

	"github.com/rocketstore/rocketstore/backend"
)

// rebuildMarker records a ConsumeQueue rebuild in progress. The rebuild
// destroys every queue and replays the CommitLog from its minimum; a power
// cut in between may keep the queues' removal and lose part of what the
// replay wrote, while the checkpoint still vouches for the old units, so
// the next recovery, scanning only from the checkpoint, would not bring
// them back: messages below its scan start would be hidden. With the
// marker on disk, recovery redoes the whole rebuild; the marker also keeps
// the expired queues' last units, which the destroyed queues held and
// nothing else does (keepExpiredQueueOffsets).
const rebuildMarker = "consumequeue.rebuild"

// rebuildIntent is the marker's content.
type rebuildIntent struct {
	Expired []intentTail `json:"expired"`
}

// intentTail is an expiredTail as the marker stores it.
type intentTail struct {
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Index   int64  `json:"index"`
	Unit    Unit   `json:"unit"`
}

// rebuildPending reports whether an interrupted rebuild's marker exists.
func (s *Store) rebuildPending() bool {
	_, err := s.fs.Stat(rebuildMarker)
	return err == nil
}

// beginRebuild returns the expired queue tails the rebuild must keep: an
// interrupted rebuild's, from its marker, or the current queues', written
// durably to a new marker before the queues are destroyed.
func (s *Store) beginRebuild() ([]expiredTail, error) {
	if s.rebuildPending() {
		return s.readRebuildMarker()
	}
	tails := s.expiredQueueTails()
	if s.cfg.hooks.NoRebuildMarker || !s.hasQueues() {
		// Nothing to destroy (a new store), nothing a cut could lose.
		return tails, nil
	}
	in := rebuildIntent{Expired: make([]intentTail, len(tails))}
	for i, t := range tails {
		in.Expired[i] = intentTail{t.topic, t.queueID, t.index, t.unit}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if err := backend.WriteFileAtomic(s.fs, rebuildMarker, data); err != nil {
		return nil, fmt.Errorf("%w: write %s: %w", ErrFlushFailed, rebuildMarker, err)
	}
	return tails, nil
}

func (s *Store) readRebuildMarker() ([]expiredTail, error) {
	data, err := backend.ReadFile(s.fs, rebuildMarker)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rebuildMarker, err)
	}
	var in rebuildIntent
	if err := json.Unmarshal(data, &in); err != nil {
		// WriteFileAtomic never leaves a partial marker: this is damage.
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptStore, rebuildMarker, err)
	}
	tails := make([]expiredTail, len(in.Expired))
	for i, t := range in.Expired {
		tails[i] = expiredTail{t.Topic, t.QueueID, t.Index, t.Unit}
	}
	s.cfg.Logger.Warn("redoing an interrupted consume queue rebuild", "expiredQueues", len(tails))
	return tails, nil
}

// hasQueues reports whether the store has any ConsumeQueue.
func (s *Store) hasQueues() bool {
	has := false
	s.queues.all(func(*consumeQueue) error { has = true; return nil })
	return has
}

// endRebuild makes the rebuilt queues durable, then removes the marker.
func (s *Store) endRebuild() error {
	if err := s.queues.all(func(cq *consumeQueue) error { return cq.flushAll() }); err != nil {
		return err
	}
	if !s.rebuildPending() {
		return nil
	}
	if err := s.fs.Remove(rebuildMarker); err != nil {
		return fmt.Errorf("remove %s: %w", rebuildMarker, err)
	}
	if err := s.fs.SyncDir("."); err != nil {
		return fmt.Errorf("%w: sync dir after removing %s: %w", ErrFlushFailed, rebuildMarker, err)
	}
	return nil
}
