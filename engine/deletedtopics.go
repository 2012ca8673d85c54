package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
)

// DeletedTopicsFile names the store-root file that records deleted topics:
// a JSON object from topic to the CommitLog offset at which it was deleted.
// A deleted topic's records stay in the CommitLog until retention removes
// them, and recovery replays the CommitLog into the ConsumeQueues; without
// this record a crash after DELETE_TOPIC would bring the topic's queues
// back (RocketMQ has the same hole). Records of a listed topic below its
// offset are never dispatched; an entry goes once retention has removed
// everything below its offset.
const DeletedTopicsFile = "deletedtopics"

// deletedTopics is the in-memory copy of DeletedTopicsFile.
type deletedTopics struct {
	mu  sync.Mutex
	m   atomic.Pointer[map[string]int64] // read by the dispatcher without mu
	any atomic.Bool
}

// ReadDeletedTopics returns the deleted topics recorded in the root of fs
// (empty when there is no record).
func ReadDeletedTopics(fs backend.FS) (map[string]int64, error) {
	seg, err := fs.Open(DeletedTopicsFile)
	if errors.Is(err, backend.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", DeletedTopicsFile, err)
	}
	defer seg.Close()
	m := map[string]int64{}
	if err := json.Unmarshal(seg.View(0, seg.Size()), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object of topic to commitlog offset (%v); "+
			"it records deleted topics, so it is not ignored: fix or remove it (removing it brings the deleted topics' queues back)",
			ErrCorruptStore, DeletedTopicsFile, err)
	}
	return m, nil
}

// loadDeletedTopics reads the record, dropping topics whose records
// retention has removed since.
func (s *Store) loadDeletedTopics() error {
	m, err := ReadDeletedTopics(s.fs)
	if err != nil {
		return err
	}
	for t, off := range m {
		if off <= s.commitLog.MinOffset() {
			delete(m, t)
		}
	}
	s.deleted.m.Store(&m)
	s.deleted.any.Store(len(m) > 0)
	return nil
}

// deletedBelow reports whether a record of topic at CommitLog offset off
// belongs to a deletion: such records are not dispatched.
func (s *Store) deletedBelow(topic []byte, off int64) bool {
	if !s.deleted.any.Load() {
		return false
	}
	mark, ok := (*s.deleted.m.Load())[string(topic)]
	return ok && off < mark
}

// recordDeletion makes the deletion of topic at CommitLog offset mark
// durable before any of its files go: written to a temporary file, synced,
// renamed over the record and the directory synced.
func (s *Store) recordDeletion(topic string, mark int64) error {
	s.deleted.mu.Lock()
	defer s.deleted.mu.Unlock()
	next := map[string]int64{}
	if cur := s.deleted.m.Load(); cur != nil {
		for t, o := range *cur {
			if o > s.commitLog.MinOffset() {
				next[t] = o
			}
		}
	}
	next[topic] = mark
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	tmp := DeletedTopicsFile + ".tmp"
	if err := s.fs.Remove(tmp); err != nil && !errors.Is(err, backend.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", tmp, err)
	}
	seg, err := s.fs.Create(tmp, int64(len(b)))
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = seg.WriteAt(b, 0)
	if err == nil {
		err = seg.Sync(0, int64(len(b)))
	}
	if cerr := seg.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, DeletedTopicsFile)
	}
	if err == nil {
		err = s.fs.SyncDir(".")
	}
	if err != nil {
		return fmt.Errorf("record deletion of topic %s in %s: %w", topic, DeletedTopicsFile, err)
	}
	s.deleted.m.Store(&next)
	s.deleted.any.Store(true)
	return nil
}
