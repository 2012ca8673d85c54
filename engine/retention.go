package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/internal/defaults"
	"github.com/rocketstore/rocketstore/record"
)

// RetentionPolicy says when CommitLog files expire (RocketMQ's
// CleanCommitLogService). The zero value of each field means RocketMQ's
// default, given in its comment.
type RetentionPolicy struct {
	// FileReservedTime is how long a file is kept after its last message
	// was stored (72 h).
	FileReservedTime time.Duration
	// DeleteWhen lists the hours of the day ("04", or "01;02") in which
	// expired files are deleted ("04").
	DeleteWhen string
	// DiskMaxUsedSpaceRatio is the disk usage, in percent, above which
	// expired files are deleted at any hour (75, clamped to 10..95).
	DiskMaxUsedSpaceRatio int
	// DiskCleanForciblyRatio is the usage above which files are deleted
	// even before they expire (85).
	DiskCleanForciblyRatio int
	// MaxFilesPerRound bounds the CommitLog files deleted by one round
	// (10, RocketMQ's DELETE_FILES_BATCH_MAX).
	MaxFilesPerRound int
	// CleanResourceInterval is the period of the clean service (10 s).
	CleanResourceInterval time.Duration
	// DiskUsage returns the used share (0..1) of the disk holding the
	// store; nil means usage is unknown and never triggers a clean.
	DiskUsage func() (float64, error)
}

func (p RetentionPolicy) withDefaults() RetentionPolicy {
	defaults.Set(&p.FileReservedTime, 72*time.Hour)
	defaults.Set(&p.DeleteWhen, "04")
	defaults.Set(&p.DiskMaxUsedSpaceRatio, 75)
	p.DiskMaxUsedSpaceRatio = min(max(p.DiskMaxUsedSpaceRatio, 10), 95)
	defaults.Set(&p.DiskCleanForciblyRatio, 85)
	defaults.Set(&p.MaxFilesPerRound, 10)
	defaults.Set(&p.CleanResourceInterval, 10*time.Second)
	return p
}

// RetentionReport says what a clean round did.
type RetentionReport struct {
	// CommitLogFiles and ConsumeQueueFiles count the files deleted.
	CommitLogFiles    int
	ConsumeQueueFiles int
	// MinOffset is the CommitLog's minimum offset afterwards.
	MinOffset int64
}

// isDeleteHour reports whether now's hour is one of DeleteWhen's.
func (p RetentionPolicy) isDeleteHour(now time.Time) bool {
	for _, h := range strings.Split(p.DeleteWhen, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n == now.Hour() {
			return true
		}
	}
	return false
}

// shouldClean applies RocketMQ's triggers: the delete hour, or a disk above
// DiskMaxUsedSpaceRatio; above DiskCleanForciblyRatio files go even before
// they expire.
func (p RetentionPolicy) shouldClean(now time.Time) (clean, immediately bool) {
	if p.DiskUsage != nil {
		if used, err := p.DiskUsage(); err == nil {
			pct := int(used * 100)
			if pct >= p.DiskCleanForciblyRatio {
				return true, true
			}
			if pct >= p.DiskMaxUsedSpaceRatio {
				return true, false
			}
		}
	}
	return p.isDeleteHour(now), false
}

// DeleteExpiredFiles runs one clean round at time now: it deletes expired
// CommitLog files from the head (never the last file; at most
// MaxFilesPerRound; stopping at the first file that is kept), then every
// ConsumeQueue file whose units all point below the new CommitLog minimum,
// and moves each queue's minimum offset (so consumers behind it get
// OFFSET_TOO_SMALL). With force set, files go whatever their age.
//
// A file is expired when the first message of the next file was stored
// FileReservedTime before now: every message of the file is older than
// that. Readers holding views of a deleted file keep them valid until they
// release them.
func (s *Store) DeleteExpiredFiles(now time.Time, p RetentionPolicy, force bool) (RetentionReport, error) {
	if s.closed.Load() {
		return RetentionReport{}, ErrClosed
	}
	p = p.withDefaults()
	deadline := now.Add(-p.FileReservedTime).UnixMilli()
	files := s.commitLog.q.snapshot()
	// A file goes only once the dispatcher is past it: a file removed
	// before its records are in their ConsumeQueues would leave a gap of
	// queue offsets the dispatcher could never fill (a forced clean of
	// a full disk while dispatch is stuck).
	dispatched := s.reput.ReputFromOffset()
	expired := func(mf *mappedFile) bool {
		if mf.fileFromOffset+mf.fileSize > dispatched {
			return false
		}
		if force {
			return true
		}
		next := s.nextFile(files, mf)
		return next != nil && firstStoreTimestamp(next) <= deadline
	}
	var rep RetentionReport
	if len(files) < 2 || !expired(files[0]) {
		rep.MinOffset = s.commitLog.MinOffset()
		return rep, nil
	}
	// Every unit pointing into a file must be durable before the file
	// goes. Else a power cut could bring back the queue with a hole of
	// zero units (its pages never written back) among durable ones that
	// point into the deleted files: recovery trusts units below its scan
	// start, which the checkpoint no longer bounds once the file it
	// named is gone.
	if err := s.flushQueuesForRetention(); err != nil {
		return rep, err
	}
	deleted := 0
	n, err := s.commitLog.q.deleteFirstFiles(func(mf *mappedFile) bool {
		if deleted >= p.MaxFilesPerRound || !expired(mf) {
			return true
		}
		deleted++
		return false
	})
	rep.CommitLogFiles = n
	if err != nil {
		s.correctMinOffsets()
		return rep, err
	}
	rep.MinOffset = s.commitLog.MinOffset()
	// ConsumeQueue files go only once every CommitLog removal so far is
	// durable (an earlier round's directory sync may have failed): else a
	// power cut could bring back CommitLog files whose queue units are
	// gone, and recovery from the checkpoint and from offset 0 would
	// disagree on whether those messages exist.
	if err := s.fs.SyncDir(commitLogDir); err != nil && !errors.Is(err, backend.ErrNotExist) {
		s.correctMinOffsets()
		return rep, fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, commitLogDir, err)
	}
	rep.ConsumeQueueFiles, err = s.deleteConsumeQueueFilesBelow(rep.MinOffset)
	if n > 0 {
		s.cfg.Logger.Info("deleted expired files", "commitlogFiles", n, "consumeQueueFiles", rep.ConsumeQueueFiles,
			"minOffset", rep.MinOffset)
	}
	return rep, err
}

// flushQueuesForRetention syncs every ConsumeQueue (not the checkpoint)
// before a clean round deletes CommitLog files. A failed sync turns the
// store read-only, as the flush service's would.
func (s *Store) flushQueuesForRetention() error {
	if s.cfg.hooks.NoRetentionQueueFlush {
		return nil
	}
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("%w: %w", ErrReadOnly, *e)
	}
	err := s.queues.all(func(cq *consumeQueue) error { return cq.flushAll() })
	if err != nil {
		s.fail(err)
		return fmt.Errorf("flush consume queues before deleting commitlog files: %w", err)
	}
	return nil
}

// correctMinOffsets moves every queue's minimum to the CommitLog's after a
// failed clean round: the files already dropped from the queue are gone for
// readers, so the minimums must follow or they would point at deleted
// records.
func (s *Store) correctMinOffsets() {
	phyMin := s.commitLog.MinOffset()
	s.queues.all(func(cq *consumeQueue) error { cq.correctMinOffset(phyMin); return nil })
}

func (s *Store) nextFile(files []*mappedFile, mf *mappedFile) *mappedFile {
	for i, f := range files {
		if f == mf && i+1 < len(files) {
			return files[i+1]
		}
	}
	return nil
}

// firstStoreTimestamp returns the store time of a file's first record, or
// MaxInt64 when it has none (such a file is never judged expired).
func firstStoreTimestamp(mf *mappedFile) int64 {
	info, err := record.Check(mf.seg.View(0, mf.wrote.Load()), mf.fileFromOffset, false)
	if err != nil || info.Blank {
		return 1<<63 - 1
	}
	return info.StoreTimestamp
}

// deleteConsumeQueueFilesBelow deletes, in every queue, the files (never
// the last) whose last unit points below phyMin, then corrects the queues'
// minimum offsets (RocketMQ's deleteExpiredFileByOffset + correctMinOffset).
func (s *Store) deleteConsumeQueueFilesBelow(phyMin int64) (int, error) {
	total := 0
	err := s.queues.all(func(cq *consumeQueue) error {
		n, err := cq.q.deleteFirstFiles(func(mf *mappedFile) bool {
			b := mf.seg.View(0, mf.wrote.Load())
			if len(b) < CQUnitSize {
				return true
			}
			last := DecodeUnit(b[len(b)-CQUnitSize:])
			return last == blankUnit || last.CommitLogOffset >= phyMin
		})
		total += n
		cq.correctMinOffset(phyMin) // even after a failed removal
		if err != nil {
			return fmt.Errorf("consume queue %s/%d: %w", cq.topic, cq.queueID, err)
		}
		return nil
	})
	return total, err
}

// cleanService runs DeleteExpiredFiles every CleanResourceInterval when the
// policy's triggers say so.
func (s *Store) startCleanService(p RetentionPolicy) *ticker {
	p = p.withDefaults()
	return startTicker(s.cfg.Clock, p.CleanResourceInterval, func(*time.Time) {
		now := s.now()
		clean, immediately := p.shouldClean(now)
		if !clean {
			return
		}
		if _, err := s.DeleteExpiredFiles(now, p, immediately); err != nil {
			s.cfg.Logger.Error("delete expired files", "err", err)
		}
	})
}
