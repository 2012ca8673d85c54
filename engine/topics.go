package engine

import (
	"errors"
	"fmt"
	"path"
)

// DeleteTopic removes every ConsumeQueue of topic and forgets its queue
// offsets (RocketMQ's deleteTopics, behind DELETE_TOPIC_IN_BROKER): its
// messages can no longer be read through the queues, a topic of the same
// name starts again at queue offset 0, and the CommitLog bytes go with
// retention. Callers stop sending to the topic first; readers holding views
// keep them until they release.
func (s *Store) DeleteTopic(topic string) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return s.reput.Exclusive(func() error {
		var errs []error
		if len(s.Topics()[topic]) == 0 {
			return nil
		}
		// Durable before any file goes: recovery after a crash must not
		// replay the topic's records into new queues.
		if err := s.recordDeletion(topic, s.commitLog.MaxOffset()); err != nil {
			return fmt.Errorf("engine: delete topic %s: %w", topic, err)
		}
		queues := s.queues.removeTopic(topic)
		for _, cq := range queues {
			s.commitLog.removeQueue(topic, cq.queueID)
			errs = append(errs, cq.q.destroy())
		}
		if err := s.fs.RemoveAll(path.Join(consumeQueueDir, topic)); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", topic, err))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("engine: delete topic %s: %w", topic, err)
		}
		return s.fs.SyncDir(consumeQueueDir)
	})
}
