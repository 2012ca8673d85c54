package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/dispatch"
)

// Running-flag errors: a put refused for one of them wraps ErrReadOnly too,
// so that the broker answers SERVICE_NOT_AVAILABLE, and the store accepts
// puts again by itself once the cause is gone (RocketMQ's RunningFlags
// DISK_FULL and LOGICS_QUEUE_ERROR bits).
var (
	// ErrDiskFull reports a put refused because the last file creation
	// failed with ENOSPC or EDQUOT. Puts are tried again at most once per
	// DiskFullRetryInterval; the first that succeeds clears the state.
	ErrDiskFull = errors.New("engine: disk full")
	// ErrDispatchFailing reports a put refused because the dispatcher
	// cannot index the CommitLog (a ConsumeQueue or index file cannot be
	// created or written): messages stored now could not be consumed. The
	// dispatcher retries every second and puts resume when it succeeds.
	ErrDispatchFailing = errors.New("engine: dispatch failing, messages cannot be made consumable")
)

// DiskFullRetryInterval is how often a store whose disk was full lets a
// put try again.
const DiskFullRetryInterval = time.Second

// faultRepeatInterval bounds how often a fault that persists is logged
// again at ERROR.
const faultRepeatInterval = time.Minute

// Health is a snapshot of the store's running state and fault counters
// (exported as metrics by the server).
type Health struct {
	// Writable is false while puts are refused; Reason says why.
	Writable bool
	Reason   error
	// DiskFull, DispatchFailing and FlushFailed are the running flags.
	// The first two clear by themselves; FlushFailed is final (a failed
	// sync may have lost data for good: reopen the store).
	DiskFull, DispatchFailing, FlushFailed bool
	// DiskFullErrors, DispatchErrors and FlushErrors count failures
	// since Open: ENOSPC on file creation, failed dispatch passes (each
	// retry counts), failed syncs.
	DiskFullErrors, DispatchErrors, FlushErrors int64
	// DamagedRecords counts the damaged CommitLog records recovery
	// skipped (see RecoveryReport.Damaged) and that are not repaired
	// since (engineops.Ops.RepairDamaged).
	DamagedRecords int
	// UnitMismatches counts the ConsumeQueue units GetMessage or a clean
	// start found not to match the CommitLog record they point at
	// (damaged queue files);
	// none is ever served. UnitsRepaired counts those rewritten from the
	// CommitLog, UnitsLost those whose record it does not hold (pulls
	// step over them).
	UnitMismatches, UnitsRepaired, UnitsLost int64
	// PageReleaseErrors counts the flushes whose release of the written
	// pages' mapping failed (see releaseWritten). Such a flush still
	// syncs every byte; it only pays the slower writeback, so the store
	// stays writable.
	PageReleaseErrors int64
}

// health holds the store's resumable running flags and counters.
type health struct {
	diskFull    atomic.Pointer[diskFullState]
	dispatchErr atomic.Pointer[error]

	diskFullErrors, dispatchErrors, flushErrors atomic.Int64

	diskLog, dispatchLog faultLog

	// release counts and logs failed page releases before flushes.
	release pageReleaseFaults
}

type diskFullState struct {
	err     error
	retryAt time.Time
}

// isDiskFull reports whether err is the file system running out of space.
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Health returns the store's running state and fault counters.
func (s *Store) Health() Health {
	h := Health{
		DiskFullErrors:  s.health.diskFullErrors.Load(),
		DispatchErrors:  s.health.dispatchErrors.Load(),
		FlushErrors:     s.health.flushErrors.Load(),
		DiskFull:        s.health.diskFull.Load() != nil,
		DispatchFailing: s.health.dispatchErr.Load() != nil,
		FlushFailed:     s.failed.Load() != nil,
		DamagedRecords:  len(s.DamagedRanges()),

		PageReleaseErrors: s.health.release.count.Load(),

		UnitMismatches: s.units.mismatches.Load(),
		UnitsRepaired:  s.units.repaired.Load(),
		UnitsLost:      s.units.lostCount.Load(),
	}
	h.Reason = s.writableAt(time.Time{})
	h.Writable = h.Reason == nil
	return h
}

// writableAt returns why puts are refused, or nil. A zero now reports the
// disk-full state without the retry window.
func (s *Store) writableAt(now time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("%w: %w", ErrReadOnly, *e)
	}
	if e := s.health.dispatchErr.Load(); e != nil {
		return fmt.Errorf("%w: %w: %w", ErrReadOnly, ErrDispatchFailing, *e)
	}
	if d := s.health.diskFull.Load(); d != nil && (now.IsZero() || now.Before(d.retryAt)) {
		return fmt.Errorf("%w: %w: %w", ErrReadOnly, ErrDiskFull, d.err)
	}
	return nil
}

// diskFull records a put that failed for lack of space.
func (s *Store) diskFull(err error) error {
	s.health.diskFullErrors.Add(1)
	s.health.diskFull.Store(&diskFullState{err: err, retryAt: s.now().Add(DiskFullRetryInterval)})
	s.health.diskLog.failed(s.cfg.Logger, "disk full: puts are refused (SERVICE_NOT_AVAILABLE) until space is freed", err)
	return fmt.Errorf("%w: %w: %w", ErrReadOnly, ErrDiskFull, err)
}

// now is the store's clock (Config.Clock) in whole milliseconds, as the
// records are stamped: the disk-full retry window follows it, so that
// tests can step it.
func (s *Store) now() time.Time { return time.UnixMilli(s.cfg.now()) }

// putSucceeded clears the disk-full state after a put that worked.
func (s *Store) putSucceeded() {
	if s.health.diskFull.Load() != nil && s.health.diskFull.Swap(nil) != nil {
		s.health.diskLog.resumed(s.cfg.Logger, "disk space available again: puts accepted")
	}
}

// dispatchHooks connects the dispatcher's failures to the running flags.
func (s *Store) dispatchHooks() {
	s.reput.SetHooks(dispatchHooks{s}.hooks())
}

type dispatchHooks struct{ s *Store }

func (h dispatchHooks) hooks() (hk dispatch.Hooks) {
	hk.Failed = func(err error) {
		h.s.health.dispatchErrors.Add(1)
		if isDiskFull(err) {
			// A ConsumeQueue or index file that cannot be created is the
			// disk being full as much as a CommitLog file is: the disk-full
			// flag and counter (store_disk_full, disk_full_errors_total)
			// say so. The dispatch flag keeps puts refused meanwhile.
			h.s.health.diskFullErrors.Add(1)
			h.s.health.diskFull.Store(&diskFullState{err: err, retryAt: h.s.now().Add(DiskFullRetryInterval)})
		}
		h.s.health.dispatchErr.Store(&err)
		h.s.health.dispatchLog.failed(h.s.cfg.Logger,
			"dispatch failed: messages cannot be made consumable; puts are refused (SERVICE_NOT_AVAILABLE) and dispatch retries every second", err)
	}
	hk.Resumed = func() {
		h.s.health.diskFull.Store(nil) // the files were created: there is space again
		h.s.health.dispatchErr.Store(nil)
		h.s.health.dispatchLog.resumed(h.s.cfg.Logger, "dispatch resumed: puts accepted")
	}
	return hk
}

// pageReleaseFaults is where the queues of a store report a failed
// release of written pages (releaseWritten): a counter (Health, exported
// as a metric) and a rate-limited WARN naming the file, the range and the
// OS error. Not an ERROR and not a running flag: the sync that follows
// writes the pages anyway, so nothing is lost and no client is refused.
type pageReleaseFaults struct {
	logger  *slog.Logger
	count   atomic.Int64
	failing atomic.Bool
	log     faultLog
}

const pageReleaseFailedMsg = "flush: releasing the mapping of written pages failed; the sync still writes them, only slower"

func (p *pageReleaseFaults) failed(file string, from, to int64, err error) {
	p.count.Add(1)
	p.failing.Store(true)
	p.log.failed(p.logger, pageReleaseFailedMsg, err, "file", file, "from", from, "to", to)
}

// succeeded logs the end of a run of failures; it costs an atomic load
// while there is none.
func (p *pageReleaseFaults) succeeded() {
	if p.failing.Load() && p.failing.Swap(false) {
		p.log.resumed(p.logger, "flush: releasing the mapping of written pages works again")
	}
}

// faultLog logs a persisting fault at ERROR when it starts, then at most
// once per faultRepeatInterval, and at WARN when it ends.
type faultLog struct {
	// warn logs the start and repeats at WARN instead of ERROR (a fault
	// that costs only time).
	warn bool
	// clock is the store's (Config.Clock), set at Open, so that the
	// repeat interval follows a test's clock; nil means time.Now.
	clock    func() time.Time
	mu       sync.Mutex
	since    time.Time
	lastLog  time.Time
	failures int64
}

func (l *faultLog) now() time.Time {
	if l.clock == nil {
		return time.Now()
	}
	return l.clock()
}

// failed logs err (and args, key-value pairs naming where) if the fault
// is new or was last logged faultRepeatInterval ago.
func (l *faultLog) failed(log *slog.Logger, msg string, err error, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.failures++
	level := slog.LevelError
	if l.warn {
		level = slog.LevelWarn
	}
	switch {
	case l.since.IsZero():
		l.since, l.lastLog = now, now
		log.Log(context.Background(), level, msg, append(args, "err", err)...)
	case now.Sub(l.lastLog) >= faultRepeatInterval:
		l.lastLog = now
		log.Log(context.Background(), level, msg, append(args, "err", err, "failingFor", now.Sub(l.since).Round(time.Second), "failures", l.failures)...)
	}
}

func (l *faultLog) resumed(log *slog.Logger, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		return
	}
	log.Warn(msg, "failedFor", l.now().Sub(l.since).Round(time.Millisecond), "failures", l.failures)
	l.since, l.failures = time.Time{}, 0
}
