package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
	return s.flushCommitLog(leastPages)
}

// flushCommitLog is FlushCommitLog for the store's own services and Close.
func (s *Store) flushCommitLog(leastPages int) error {
	if e := s.failed.Load(); e != nil {
		// A sync failed before: pages it dropped may be lost for good,
		// so no later flush can vouch for what was written.
		return fmt.Errorf("%w: %w", ErrReadOnly, *e)
	}
	q := s.commitLog.q
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
		if unchanged || leastPages > 0 {
			return nil
		}
	}
}

// FlushConsumeQueues flushes every ConsumeQueue under the least-pages rule.
// With leastPages 0 it also flushes the checkpoint, recording the
// logicsMsgTimestamp captured before the queues were synced (so the
// checkpoint never claims more than the queues hold).
func (s *Store) FlushConsumeQueues(leastPages int) error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return s.flushConsumeQueues(leastPages)
}

// flushConsumeQueues is FlushConsumeQueues for the services and Close.
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
	if time.Since(*lastThorough) >= s.cfg.FlushConsumeQueueThoroughInterval {
		*lastThorough = time.Now()
		least = 0
	}
	if err := s.flushConsumeQueues(least); err != nil && !errors.Is(err, ErrReadOnly) {
		// A store already read-only said so once (fail); this logs a
		// new failure, then at most once a minute while it lasts.
		s.cqFlushLog.failed(s.cfg.Logger, "flush consume queues", err)
	}
}

// ticker runs fn every interval in its own goroutine until close.
type ticker struct {
	stop chan struct{}
	done chan struct{}
}

func startTicker(interval time.Duration, fn func(lastThorough *time.Time)) *ticker {
	t := &ticker{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		last := time.Now()
		for {
			select {
			case <-tk.C:
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

// commitLogFlusher is the CommitLog flush service: a group-commit loop for
// SyncFlush (RocketMQ's GroupCommitService) or a timed loop with least
// pages and a thorough interval for AsyncFlush (FlushRealTimeService).
type commitLogFlusher struct {
	s    *Store
	stop chan struct{}
	done chan struct{}
	kick chan struct{}

	// requested is the highest CommitLog offset a SyncFlush put waits for.
	requested atomic.Int64
	// halted stops the loop without its final flush (Store.Abandon).
	halted atomic.Bool

	mu      sync.Mutex
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
	tk := time.NewTicker(f.s.cfg.FlushIntervalCommitLog)
	defer tk.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-tk.C:
		case <-f.stop:
			return
		}
		least := f.s.cfg.FlushCommitLogLeastPages
		if time.Since(lastThorough) >= f.s.cfg.FlushCommitLogThoroughInterval {
			lastThorough = time.Now()
			least = 0
		}
		if err := f.s.flushCommitLog(least); err != nil {
			f.s.cfg.Logger.Error("flush commitlog", "err", err)
			return
		}
	}
}

// groupCommitLoop syncs whenever a put asks, covering every put that
// arrived while the previous sync ran (group commit).
func (f *commitLogFlusher) groupCommitLoop() {
	defer close(f.done)
	for {
		select {
		case <-f.kick:
		case <-f.stop:
			if !f.halted.Load() {
				f.commit()
			}
			return
		}
		f.commit()
	}
}

func (f *commitLogFlusher) commit() {
	if f.s.commitLog.q.FlushedWhere() < f.requested.Load() {
		if err := f.s.flushCommitLog(0); err != nil {
			f.s.cfg.Logger.Error("group commit", "err", err)
		}
	}
	f.mu.Lock()
	close(f.flushed)
	f.flushed = make(chan struct{})
	f.mu.Unlock()
	// With SyncFlush the dispatcher stops at the flushed position.
	f.s.reput.Wake()
}

// request asks the group commit to sync up to off, without waiting (a put
// whose WAIT property is false).
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

// waitFlushed blocks until the CommitLog is synced up to off.
func (f *commitLogFlusher) waitFlushed(ctx context.Context, off int64) error {
	f.request(off)
	timer := time.NewTimer(f.s.cfg.SyncFlushTimeout)
	defer timer.Stop()
	for {
		if f.s.commitLog.q.FlushedWhere() >= off {
			return nil
		}
		if e := f.s.failed.Load(); e != nil {
			return fmt.Errorf("%w: %w", ErrFlushFailed, *e)
		}
		f.mu.Lock()
		ch := f.flushed
		f.mu.Unlock()
		if f.s.commitLog.q.FlushedWhere() >= off {
			return nil
		}
		// Checked again after taking ch: a halt that set failed and
		// replaced the channel before we took it never closes ch.
		if e := f.s.failed.Load(); e != nil {
			return fmt.Errorf("%w: %w", ErrFlushFailed, *e)
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Errorf("%w: offset %d not synced within %v", ErrFlushTimeout, off, f.s.cfg.SyncFlushTimeout)
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrFlushTimeout, ctx.Err())
		}
	}
}

// close stops the service after flushing everything (RocketMQ retries the
// final flush; one full flush suffices because it loops over files).
func (f *commitLogFlusher) close() error {
	close(f.stop)
	<-f.done
	if err := f.s.flushCommitLog(0); err != nil {
		return err
	}
	f.mu.Lock()
	close(f.flushed)
	f.flushed = make(chan struct{})
	f.mu.Unlock()
	return nil
}

// halt stops the service without flushing and wakes every waiter, which
// then sees the store's failure.
func (f *commitLogFlusher) halt() {
	f.halted.Store(true)
	close(f.stop)
	<-f.done
	f.mu.Lock()
	close(f.flushed)
	f.flushed = make(chan struct{})
	f.mu.Unlock()
}
