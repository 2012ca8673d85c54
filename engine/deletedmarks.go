package engine

import "maps"

// DeletedTopics returns a copy of the deleted-topic record: each topic
// deleted while its records are still held, with the CommitLog offset at
// which it was deleted (what DeletedTopicsFile holds). A replicated group
// (package cluster) carries it in its snapshots, so that a replica caught
// up from another's CommitLog deletes the topic at the same offset.
func (s *Store) DeletedTopics() map[string]int64 {
	if m := s.deleted.m.Load(); m != nil {
		return maps.Clone(*m)
	}
	return map[string]int64{}
}
