package pop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/engine"
)

// ReplayFromFile is the path, in the store root, of the file that names
// where Open starts replaying the revive topic: the start of the latest
// complete snapshot.
const ReplayFromFile = "config/popReplayFrom.json"

type replayFromJSON struct {
	ReviveOffset int64 `json:"reviveOffset"`
}

// Compact writes a snapshot of the whole in-flight state into the revive
// topic (a start record, then one record a queue, each under its queue's
// lock), makes it durable, and then records its start in ReplayFromFile,
// so that Open replays from there instead of from the revive topic's
// first record. Records a queue gets before its snapshot record are
// already in it, and any later ones follow it; a queue created after the
// start record has all its records after it. The background revive pass
// compacts every Config.CompactEvery records.
func (s *Service) Compact(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.cfg.FS == nil {
		return nil
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	now := s.now()
	start, err := s.write(ctx, &logRecord{op: opSnapStart, popTime: now})
	if err != nil {
		return err
	}
	if s.cfg.broken.SnapshotFileFirst {
		if err := s.saveReplayStart(start); err != nil {
			return err
		}
	}
	written := s.written.Load()
	for _, q := range s.sortedQueues() {
		if err := s.snapshotQueue(ctx, q, now); err != nil {
			return err
		}
	}
	// The snapshot must be durable before the file points at it.
	if s.store.Config().FlushDiskType != engine.SyncFlush {
		if err := s.store.FlushCommitLog(0); err != nil {
			return fmt.Errorf("pop: sync the snapshot: %w", err)
		}
	}
	if !s.cfg.broken.SnapshotFileFirst {
		if err := s.saveReplayStart(start); err != nil {
			return err
		}
	}
	s.compacted.Store(written)
	return nil
}

func (s *Service) saveReplayStart(at int64) error {
	if err := configfile.Save(s.cfg.FS, ReplayFromFile, replayFromJSON{ReviveOffset: at}); err != nil {
		return fmt.Errorf("pop: save %s: %w", ReplayFromFile, err)
	}
	return nil
}

// compactDue reports whether Config.CompactEvery records were written
// since the last snapshot.
func (s *Service) compactDue() bool {
	return s.cfg.FS != nil && s.written.Load()-s.compacted.Load() >= int64(s.cfg.CompactEvery)
}

// snapshotQueue writes one queue's snapshot record.
func (s *Service) snapshotQueue(ctx context.Context, q *queueState, now int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pos < 0 && q.entries.len() == 0 {
		return nil
	}
	_, err := s.write(ctx, q.snapshot(now))
	return err
}

// replayStart returns the revive-queue offset Open replays from: the
// latest complete snapshot's start, or the queue's first record.
func (s *Service) replayStart() (int64, error) {
	first := s.store.MinOffsetInQueue(s.cfg.ReviveTopic, reviveQueueID)
	if s.cfg.FS == nil {
		return first, nil
	}
	var f replayFromJSON
	src, mainErr, err := configfile.Load(s.cfg.FS, ReplayFromFile, &f)
	switch {
	case errors.Is(err, fs.ErrNotExist) || src == configfile.Missing:
		return first, nil
	case err != nil:
		return 0, fmt.Errorf("pop: read %s: %w", ReplayFromFile, err)
	}
	if mainErr != nil {
		s.cfg.Logger.Warn("pop: replay start file unusable, loaded the backup", "err", mainErr)
	}
	if f.ReviveOffset < first {
		// Retention took the snapshot: what is left is all there is.
		s.cfg.Logger.Warn("pop: the snapshot to replay from is gone; replaying what is left",
			"snapshot", f.ReviveOffset, "first", first)
		return first, nil
	}
	return f.ReviveOffset, nil
}
