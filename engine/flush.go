package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// FlushCommitLog runs one CommitLog flush round with RocketMQ's least-pages
// rule (0 flushes everything published) and advances the checkpoint's
// physicMsgTimestamp. A failed sync turns the store read-only.
func (s *Store) FlushCommitLog(leastPages int) error {
	// Shared hold: Close must not shut the files down under a flush, and
	// after Close the files are gone.
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.flushCommitLog(leastPages); err != nil {
		return err
	}
	if s.cfg.FlushDiskType == SyncFlush {
		// Under SyncFlush the dispatcher stops at the flushed position,
		// and a put whose record this flush covered returns without
		// leading a group commit, so without dispatching or waking the
		// dispatcher: the wake is this flush's (else its records wait
		// for the next put; the timer service's checkpoint, which
		// flushes its deliveries, left them undispatched).
		s.reput.Wake()
	}
	return nil
}

// flushCommitLog is FlushCommitLog for the store's own services and Close.
func (s *Store) flushCommitLog(leastPages int) error {
	if e := s.failed.Load(); e != nil {
		// A sync failed before: pages it dropped may be lost for good,
		// so no later flush can vouch for what was written.
		return fmt.Errorf("%w: %w", ErrReadOnly, *e)
	}
	q := s.commitLog.q
	// A full flush syncs what was published when it began, file by file,
	// and not what is appended meanwhile: a round per file that range
	// touches, each syncing its file up to the write position, so never a
	// range twice and nothing when nothing changed. Chasing the appends
	// (looping until a round finds nothing new) need not end under puts
	// that do not wait (WAIT=false), and the waiters it had covered got
	// FLUSH_DISK_TIMEOUT for records synced long before. A group commit
	// runs at most groupCommitRounds of these (commit).
	target := q.MaxOffset()
	for {
		unchanged, err := q.flush(leastPages)
		if err != nil {
			s.fail(err)
			return err
		}
		if ts := q.storeTimestamp.Load(); ts > 0 {
			s.checkpoint.setPhysic(ts)
		}
		// One file per round, as in RocketMQ; a full flush crosses into
		// the next file.
		if unchanged || leastPages > 0 || q.FlushedWhere() >= target {
			return nil
		}
	}
}

// flushConsumeQueuesNow flushes every ConsumeQueue under the least-pages rule.
// With leastPages 0 it also flushes the checkpoint, recording the
// logicsMsgTimestamp captured before the queues were synced (so the
// checkpoint never claims more than the queues hold).
func (s *Store) flushConsumeQueuesNow(leastPages int) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return s.flushConsumeQueues(leastPages)
}

// flushConsumeQueues is flushConsumeQueuesNow for the services and Close.
func (s *Store) flushConsumeQueues(leastPages int) error {
	if e := s.failed.Load(); e != nil {
		// As for the CommitLog: after a failed sync nothing may be
		// vouched for, least of all by a new checkpoint.
		return fmt.Errorf("%w: %w", ErrReadOnly, *e)
	}
	logics := s.checkpoint.logics()
	err := s.queues.all(func(cq *consumeQueue) error {
		if leastPages == 0 {
			return cq.flushAll()
		}
		return cq.flush(leastPages)
	})
	if err != nil {
		s.fail(err)
		return err
	}
	if leastPages != 0 {
		return nil
	}
	return s.flushCheckpoint(logics)
}

func (s *Store) flushCheckpoint(logics int64) error {
	s.checkpoint.setLogics(logics)
	if err := s.checkpoint.flush(); err != nil {
		s.fail(err)
		return err
	}
	return nil
}

// consumeQueueFlushTick is the FlushConsumeQueueService body: least pages
// every tick, everything (and the checkpoint) every thorough interval.
func (s *Store) consumeQueueFlushTick(lastThorough *time.Time) {
	least := s.cfg.FlushConsumeQueueLeastPages
	if s.cfg.Clock.Since(*lastThorough) >= s.cfg.FlushConsumeQueueThoroughInterval {
		*lastThorough = s.cfg.Clock.Now()
		least = 0
	}
	if err := s.flushConsumeQueues(least); err != nil && !errors.Is(err, ErrReadOnly) {
		// A store already read-only said so once (fail); this logs a
		// new failure, then at most once a minute while it lasts.
		s.cqFlushLog.failed(s.cfg.Logger, "flush consume queues", err)
	}
}

// ticker runs fn every interval of clock in its own goroutine until close.
type ticker struct {
	stop chan struct{}
	done chan struct{}
}

func startTicker(clock clockwork.Clock, interval time.Duration, fn func(lastThorough *time.Time)) *ticker {
	t := &ticker{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tk := clock.NewTicker(interval)
		defer tk.Stop()
		last := clock.Now()
		for {
			select {
			case <-tk.Chan():
				fn(&last)
			case <-t.stop:
				return
			}
		}
	}()
	return t
}

func (t *ticker) close() {
	close(t.stop)
	<-t.done
}

// commitLogFlusher is the CommitLog flush service. Under AsyncFlush it is a
// timed loop with least pages and a thorough interval (RocketMQ's
// FlushRealTimeService). Under SyncFlush it is a group commit (RocketMQ's
// GroupCommitService) led by the putters, as databases do it: a put that
// finds no sync running syncs everything written so far on its own
// goroutine (it leads the commit) and then runs the reput pass; puts that
// arrive meanwhile wait, and when the sync ends one of those not yet
// covered leads the next. So a lone producer pays its write, its sync and
// its dispatch, and no goroutine hand-off (a service goroutine that synced
// for it, and the reput goroutine it woke, cost it 15-20 % of its rate on
// 2 cores: BENCHMARKS.md), while concurrent producers still share each
// sync. The service goroutine only syncs for puts that do not wait
// (WAIT=false) and for waiters that gave up (timeout, context), so that
// their records are still synced and dispatched soon.
type commitLogFlusher struct {
	s    *Store
	stop chan struct{}
	done chan struct{}
	kick chan struct{}

	// requested is the highest CommitLog offset a put that does not wait
	// for its sync (or stopped waiting) asked the service to sync.
	requested atomic.Int64
	// dispatching is set while a leader runs a reput pass.
	dispatching atomic.Bool

	mu sync.Mutex
	// syncing is set while a group commit runs, a leader's or the
	// service's: at most one at a time.
	syncing bool
	// stopped is set by close and halt: no put leads any more.
	stopped bool
	flushed chan struct{} // closed and replaced after each group commit
}

func startCommitLogFlusher(s *Store) *commitLogFlusher {
	f := &commitLogFlusher{s: s, stop: make(chan struct{}), done: make(chan struct{}),
		kick: make(chan struct{}, 1), flushed: make(chan struct{})}
	if s.cfg.FlushDiskType == SyncFlush {
		go f.groupCommitLoop()
	} else {
		go f.asyncLoop()
	}
	return f
}

func (f *commitLogFlusher) asyncLoop() {
	defer close(f.done)
	clock := f.s.cfg.Clock
	tk := clock.NewTicker(f.s.cfg.FlushIntervalCommitLog)
	defer tk.Stop()
	lastThorough := clock.Now()
	for {
		select {
		case <-tk.Chan():
		case <-f.stop:
			return
		}
		least := f.s.cfg.FlushCommitLogLeastPages
		if clock.Since(lastThorough) >= f.s.cfg.FlushCommitLogThoroughInterval {
			lastThorough = clock.Now()
			least = 0
		}
		if err := f.s.flushCommitLog(least); err != nil {
			f.s.cfg.Logger.Error("flush commitlog", "err", err)
			return
		}
		// Unhurried puts (Store.PutUnhurried) wait at most for this
		// flush to be dispatched.
		if f.s.reput.BehindBytes() > 0 && !f.s.cfg.hooks.NoUnhurriedWakes {
			f.s.reput.Wake()
		}
	}
}

// groupCommitLoop syncs up to the requested offset whenever a put that
// does not wait asks. It stops without a flush of its own: close flushes
// everything after it, halt (engineops.Ops.Abandon) nothing.
func (f *commitLogFlusher) groupCommitLoop() {
	defer close(f.done)
	for {
		select {
		case <-f.kick:
		case <-f.stop:
			return
		}
		f.serviceCommit()
	}
}

// serviceCommit runs one group commit for the requested offset unless a
// commit (a leader's) already covers it. Unlike a leader it does not hold
// the store's lifecycle lock: close and halt wait for this goroutine
// before they shut the files down, and they hold that lock meanwhile.
func (f *commitLogFlusher) serviceCommit() {
	for {
		f.mu.Lock()
		if f.s.commitLog.q.FlushedWhere() >= f.requested.Load() || f.s.failed.Load() != nil {
			f.mu.Unlock()
			return
		}
		if !f.syncing {
			f.syncing = true
			f.mu.Unlock()
			f.commit()
			f.s.reput.Wake()
			return
		}
		ch := f.flushed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-f.stop:
			return
		}
	}
}

// commit syncs everything written and ends the group commit the caller
// started (syncing set). A failed sync turns the store read-only
// (flushCommitLog), which every waiter then reports.
//
// When puts wrote during the sync, it syncs once more before it ends, as
// an unbounded commit loop would: with four
// SYNC_FLUSH putters, ending after one round (waking the waiters so that
// one of them leads the next sync) leaves the disk idle for that hand-off:
// the 4 KiB ×4 sync put fell under 80 % of write+fdatasync at its batch
// size in 3 of 7 runs (75-102 %), against 82-126 % in 4 runs with the
// second round (BENCHMARKS.md). Two rounds, not "until
// nothing new": that chase need not end
// (TestSyncFlushCommitEndsAfterTwoRounds).
func (f *commitLogFlusher) commit() {
	for round := 0; round < groupCommitRounds; round++ {
		if err := f.s.flushCommitLog(0); err != nil {
			f.s.cfg.Logger.Error("group commit", "err", err)
			break
		}
		q := f.s.commitLog.q
		if q.FlushedWhere() >= q.MaxOffset() {
			break
		}
	}
	f.endCommit()
}

// groupCommitRounds bounds the syncs of one group commit: the second covers
// the puts that wrote during the first.
const groupCommitRounds = 2

// endCommit wakes the waiters of the group commit that just ended, one of
// which may lead the next.
func (f *commitLogFlusher) endCommit() {
	f.mu.Lock()
	f.syncing = false
	close(f.flushed)
	f.flushed = make(chan struct{})
	f.mu.Unlock()
}

// lead runs a group commit on the caller's goroutine (syncing set by the
// caller), then dispatches what it synced: a put that led its commit
// usually returns with its record in the ConsumeQueue. It holds the
// store's lifecycle lock shared, as an append does, so that Close and
// Abandon never shut the files down (nor halt the dispatcher) under it; on
// a store being closed it does nothing and leaves the final flush to
// Close. It returns when its sync ended, or ok false if it synced nothing.
func (f *commitLogFlusher) lead() (synced time.Time, ok bool) {
	s := f.s
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		f.endCommit()
		return time.Time{}, false
	}
	f.commit()
	synced = s.cfg.Clock.Now()
	// With SyncFlush the dispatcher stops at the flushed position, so a
	// commit must be followed by a reput pass. The leader runs it here
	// (after its waiters are woken) rather than waking the reput
	// goroutine: that wake-up cost a lone producer ~10 % of its rate on
	// 2 cores (BENCHMARKS.md). The reput goroutine keeps the pass when
	// dispatch is failing (it retries on its own schedule, not once per
	// put) and when another leader's pass is running (or this leader's
	// own: a dispatcher that puts), which a leader must not wait for.
	if s.failed.Load() == nil && s.reput.Err() == nil && f.dispatching.CompareAndSwap(false, true) {
		_, err := s.reput.DoReput()
		f.dispatching.Store(false)
		if err == nil {
			return synced, true
		}
	}
	s.reput.Wake()
	return synced, true
}

// request asks the service to sync up to off, without waiting (a put whose
// WAIT property is false, or one that stopped waiting).
func (f *commitLogFlusher) request(off int64) {
	for {
		cur := f.requested.Load()
		if cur >= off || f.requested.CompareAndSwap(cur, off) {
			break
		}
	}
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// waitFlushed returns once the CommitLog is synced up to off, leading a
// group commit itself whenever none is running. It fails with
// ErrFlushFailed when a sync failed, and with ErrFlushTimeout when off is
// not synced within SyncFlushTimeout of the call or ctx is done first (the
// record stays stored and the service still syncs it, as RocketMQ's
// FLUSH_DISK_TIMEOUT). A put leading a commit cannot abandon its own
// fdatasync: it returns when the sync does, and if that was past
// SyncFlushTimeout it reports ErrFlushTimeout although the record is now
// synced (the sync did not complete in time; RocketMQ answers
// FLUSH_DISK_TIMEOUT whatever became of the flush later).
func (f *commitLogFlusher) waitFlushed(ctx context.Context, off int64) error {
	clock := f.s.cfg.Clock
	start := clock.Now()
	timeout := f.s.cfg.SyncFlushTimeout
	var timer clockwork.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// State and channel are read under mu, and a commit ends (moves
		// the flushed position or fails, then closes the channel) before
		// it takes mu: a commit that ends after these checks closes ch.
		f.mu.Lock()
		if f.s.commitLog.q.FlushedWhere() >= off {
			f.mu.Unlock()
			return nil
		}
		if e := f.s.failed.Load(); e != nil {
			f.mu.Unlock()
			return fmt.Errorf("%w: %w", ErrFlushFailed, *e)
		}
		if f.stopped {
			// Close flushed everything without failing: nothing
			// below its flush is left unsynced, so this cannot be
			// reached, but a wait on a stopped service would hang.
			f.mu.Unlock()
			return fmt.Errorf("%w: offset %d not synced", ErrClosed, off)
		}
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			f.request(off)
			return fmt.Errorf("%w: %w", ErrFlushTimeout, err)
		}
		leader := !f.syncing && !f.s.closed.Load()
		if leader {
			f.syncing = true
		}
		ch := f.flushed
		f.mu.Unlock()
		if leader {
			synced, ok := f.lead()
			if d := synced.Sub(start); ok && d > timeout && f.s.commitLog.q.FlushedWhere() >= off {
				return fmt.Errorf("%w: offset %d synced after %v, past %v", ErrFlushTimeout, off, d.Round(time.Millisecond), timeout)
			}
			continue
		}
		if timer == nil {
			timer = clock.NewTimer(max(timeout-clock.Since(start), 0))
		}
		select {
		case <-ch:
		case <-timer.Chan():
			f.request(off)
			return fmt.Errorf("%w: offset %d not synced within %v", ErrFlushTimeout, off, timeout)
		case <-ctx.Done():
			f.request(off)
			return fmt.Errorf("%w: %w", ErrFlushTimeout, ctx.Err())
		}
	}
}

// close stops the service after flushing everything (RocketMQ retries the
// final flush; one full flush suffices because it loops over files). The
// caller holds the lifecycle lock, so no leader is syncing.
func (f *commitLogFlusher) close() error {
	close(f.stop)
	<-f.done
	err := f.s.flushCommitLog(0)
	f.stopAndWake()
	return err
}

// halt stops the service without flushing and wakes every waiter, which
// then sees the store's failure.
func (f *commitLogFlusher) halt() {
	close(f.stop)
	<-f.done
	f.stopAndWake()
}

func (f *commitLogFlusher) stopAndWake() {
	f.mu.Lock()
	f.stopped = true
	close(f.flushed)
	f.flushed = make(chan struct{})
	f.mu.Unlock()
}
