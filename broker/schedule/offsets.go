package schedule

import (
	"fmt"
	"maps"

	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/record"
)

// File is the path of the delay offset table in the store root.
const File = "config/delayOffset.json"

type fileJSON struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
}

// loadOffsets reads delayOffset.json (or its backup).
func (s *Service) loadOffsets() error {
	var f fileJSON
	_, mainErr, err := configfile.Load(s.fs, File, &f)
	if err != nil {
		return err
	}
	if mainErr != nil {
		s.cfg.Logger.Warn("delay offsets: main file unusable, loaded the backup", "err", mainErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.offsets = make(map[int]int64, len(f.OffsetTable))
	maps.Copy(s.mu.offsets, f.OffsetTable)
	return nil
}

// correctOffsets clamps each level's offset into its queue's [min, max]
// (RocketMQ's correctDelayOffset).
func (s *Service) correctOffsets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for level, off := range s.mu.offsets {
		if level < 1 || level > len(s.cfg.Levels) {
			continue
		}
		qid := int32(level - 1)
		lo, hi := s.store.MinOffsetInQueue(record.ScheduleTopic, qid), s.store.MaxOffsetInQueue(record.ScheduleTopic, qid)
		if c := min(max(off, lo), hi); c != off {
			s.cfg.Logger.Warn("delay offset outside its queue; corrected", "level", level, "offset", off, "min", lo, "max", hi)
			s.mu.offsets[level] = c
			s.mu.version++
		}
	}
}

// Offsets returns a copy of level → next offset.
func (s *Service) Offsets() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.offsets)
}

// SetOffsets replaces the offsets of the given levels (a replica takes its
// leader's; the others are kept).
func (s *Service) SetOffsets(offsets map[int]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for level, off := range offsets {
		if s.mu.offsets[level] != off {
			s.mu.offsets[level] = off
			s.mu.version++
		}
	}
}

// Persist saves the offsets crash-safely if they changed since the last
// save.
//
// Before saving, it syncs the CommitLog: an offset moves past a message
// only after its delivered copy was put, but an asynchronous put is in
// the page cache only. Were the offset durable and the copy not, a power
// cut would lose the message (RocketMQ has this hole). The snapshot is
// taken before the sync, so every put it counts is covered by the sync.
func (s *Service) Persist() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	v := s.mu.version
	if v == s.saved {
		s.mu.Unlock()
		return nil
	}
	f := fileJSON{OffsetTable: maps.Clone(s.mu.offsets)}
	s.mu.Unlock()
	if s.store != nil {
		if err := s.store.FlushCommitLog(0); err != nil {
			return fmt.Errorf("schedule: persist: sync the delivered messages first: %w", err)
		}
	}
	if err := configfile.Save(s.fs, File, f); err != nil {
		return fmt.Errorf("schedule: persist: %w", err)
	}
	s.saved = v
	return nil
}
