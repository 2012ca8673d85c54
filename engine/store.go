package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/internal/hooks"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/record"
)

// Names inside the store root (RocketMQ's layout).
const (
	commitLogDir    = "commitlog"
	consumeQueueDir = "consumequeue"
	checkpointFile  = "checkpoint"
	abortFile       = "abort"
	lockFile        = "lock"
)

// Message is what a producer stores; see record.Message.
type Message = record.Message

// MessageExt is a decoded stored message; see record.MessageExt.
type MessageExt = record.MessageExt

// Store is a RocketMQ 4.x message store: a CommitLog, its ConsumeQueues, a
// checkpoint, and the services that flush and dispatch them. All methods are
// safe for concurrent use.
type Store struct {
	cfg Config
	fs  backend.FS

	lock       backend.Unlocker
	commitLog  *CommitLog
	checkpoint *storeCheckpoint
	queues     consumeQueueTable
	reput      *dispatch.Service
	parser     *dispatch.Parser
	flusher    *commitLogFlusher
	cqFlusher  *ticker
	cleaner    *ticker

	// lifecycle is held shared by each append and exclusively by Close,
	// so Close never races an append.
	lifecycle sync.RWMutex
	closed    atomic.Bool
	// failed is set when a sync or a dispatch fails; puts are refused.
	failed atomic.Pointer[error]
	// health holds the running flags that clear by themselves (disk
	// full, dispatch failing) and the fault counters.
	health     health
	deleted    deletedTopics
	cqFlushLog faultLog

	recovery RecoveryReport
	staging  *unitStaging // abnormal recovery's batched queue writes (recovercq.go)
	// repairs marks the damaged ranges rewritten since (repairdamage.go).
	repairs damageRepairs
	// units counts and repairs damaged ConsumeQueue units (unitrepair.go).
	units unitRepairs
	// extraDispatchers are the dispatchers given to Open.
	extraDispatchers []dispatch.Dispatcher
}

// Open opens (or creates) the store in the root of fs, recovering it from
// the last shutdown or crash. Dispatchers given here run, after the
// ConsumeQueue builder, for every record replayed by recovery and every
// new record: on the reput goroutine or, with SyncFlush, on the goroutine
// of the put that led the sync, with the store's lifecycle lock held
// shared. So they must be quick and must not call the store's methods that
// write or close (Put, PutBatch, Dispatch, DeleteTopic, Close).
func Open(fs backend.FS, cfg Config, dispatchers ...dispatch.Dispatcher) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lk, err := LockStore(fs)
	if err != nil {
		return nil, err
	}
	return openLocked(fs, lk.u, cfg, dispatchers)
}

// OpenLocked is Open on a store whose lock the caller took with LockStore
// (before reading its own files of the store, as the broker does). The
// caller keeps the lock: it releases it after Close, or after a failed
// OpenLocked.
func OpenLocked(lk *StoreLock, fs backend.FS, cfg Config, dispatchers ...dispatch.Dispatcher) (*Store, error) {
	if lk == nil {
		return nil, fmt.Errorf("%w: OpenLocked without a lock", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return openLocked(fs, heldByCaller{}, cfg, dispatchers)
}

func openLocked(fs backend.FS, lk backend.Unlocker, cfg Config, dispatchers []dispatch.Dispatcher) (*Store, error) {
	cfg = cfg.withDefaults()
	s := &Store{fs: fs, cfg: cfg, lock: lk}
	s.health.diskLog.clock, s.health.dispatchLog.clock, s.cqFlushLog.clock, s.units.log.clock = s.now, s.now, s.now, s.now
	s.health.release.log.clock, s.health.release.log.warn, s.health.release.logger = s.now, true, cfg.Logger
	if err := s.open(dispatchers); err != nil {
		s.abandon()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(dispatchers []dispatch.Dispatcher) error {
	if err := s.detectFileSizes(); err != nil {
		return err
	}
	_, err := s.fs.Stat(abortFile)
	lastExitOK := errors.Is(err, backend.ErrNotExist)
	// The abort marker must be durable before recovery or the first put
	// changes a byte, or a crash could be mistaken for a clean shutdown.
	if err := s.markRunning(); err != nil {
		return err
	}
	s.commitLog = newCommitLog(s.fs, commitLogDir, &s.cfg)
	s.commitLog.q.noTailZeroing = s.cfg.hooks.NoTailZeroing
	s.commitLog.q.noRedirty = s.cfg.hooks.NoRedirty
	s.commitLog.q.releaseFaults = &s.health.release
	s.commitLog.rec.on = s.cfg.records
	s.commitLog.rec.ignore, s.commitLog.rec.noRollback = s.cfg.hooks.IgnoreCommitPoint, s.cfg.hooks.NoTruncateRollback
	s.commitLog.rec.recoveryIgnore = s.cfg.hooks.RecoveryIgnoresCommitPoint
	s.commitLog.rec.commit.Store(s.cfg.commitPoint)
	if err := s.commitLog.q.load(s.cfg.Logger); err != nil {
		return err
	}
	if err := s.loadConsumeQueues(); err != nil {
		return err
	}
	if !lastExitOK {
		// The process that died may have created files or directories
		// whose directory sync failed or never ran; the files are
		// adopted now and data will be synced into them, so their
		// entries must be made durable first.
		if err := s.syncDirs(); err != nil {
			return err
		}
	}
	if err := s.loadDeletedTopics(); err != nil {
		return err
	}
	cp, cpValid, err := openCheckpoint(s.fs, checkpointFile, s.cfg.now(), s.cfg.Logger)
	if err != nil {
		return err
	}
	s.checkpoint = cp
	parser := &dispatch.Parser{DelayLevels: s.cfg.DelayLevels}
	hooks.DispatchOf(parser).NoPhysicalOffsetCheck = s.cfg.hooks.NoPhysicalOffsetCheck
	s.parser = parser
	s.extraDispatchers = dispatchers
	all := append([]dispatch.Dispatcher{dispatch.DispatcherFunc(s.buildConsumeQueue)}, dispatchers...)
	s.reput = dispatch.NewService(commitLogReader{s.commitLog}, parser, 0, all...)
	s.reput.Clock = s.cfg.Clock
	hooks.DispatchOf(s.reput).IgnoreErrors = s.cfg.hooks.IgnoreDispatchErrors
	if err := s.recover(lastExitOK, cpValid); err != nil {
		return err
	}
	if !cpValid {
		if err := s.rewriteCheckpoint(); err != nil {
			return err
		}
	}
	s.dispatchHooks()
	s.start()
	return nil
}

// syncDirs syncs every directory of the store, deepest first: the queue
// directories, their topic directories, consumequeue/, commitlog/ and the
// root. It costs one directory sync per queue, paid only when opening after
// a crash (a clean Close leaves nothing pending: a store whose directory
// sync failed is read-only and cannot close cleanly).
func (s *Store) syncDirs() error {
	var dirs []string
	s.queues.all(func(cq *consumeQueue) error {
		dirs = append(dirs, cq.q.dir)
		return nil
	})
	if topics, err := s.fs.ListDirs(consumeQueueDir); err == nil {
		for _, t := range topics {
			dirs = append(dirs, path.Join(consumeQueueDir, t))
		}
		dirs = append(dirs, consumeQueueDir)
	}
	dirs = append(dirs, commitLogDir, ".")
	for _, d := range dirs {
		if err := s.fs.SyncDir(d); err != nil && !errors.Is(err, backend.ErrNotExist) {
			return fmt.Errorf("%w: sync dir %s: %w", ErrFlushFailed, d, err)
		}
	}
	return nil
}

// abandon releases what a failed Open acquired, writing nothing.
func (s *Store) abandon() {
	if s.commitLog != nil {
		s.commitLog.q.shutdown()
	}
	s.queues.shutdownAll()
	// Open's error is the one reported; these only release.
	if s.checkpoint != nil {
		_ = s.checkpoint.close()
	}
	_ = s.lock.Unlock()
}

// detectFileSizes takes the CommitLog and ConsumeQueue file sizes from
// existing files, so that a store written with other sizes (such as
// RocketMQ's test stores with 8 KiB CommitLog files) opens as it is. A
// size that differs from an explicit (non-default) setting, or files of
// one kind that disagree with each other, are a clear error rather than
// a misread store.
func (s *Store) detectFileSizes() error {
	// With the default size a lone short file is taken at its word:
	// nothing says how long it should be (set CommitLogFileSize to have
	// a truncated one padded).
	want := s.cfg.CommitLogFileSize
	if want == DefaultCommitLogFileSize {
		want = 0
	}
	size, where, err := s.existingFileSize(commitLogDir, want)
	if err != nil {
		return err
	}
	if size >= 0 && size != s.cfg.CommitLogFileSize {
		if explicit := s.cfg.CommitLogFileSize != DefaultCommitLogFileSize; explicit {
			return fmt.Errorf("%w: commitlog file %s is %d bytes, config says %d", ErrCorruptStore, where, size, s.cfg.CommitLogFileSize)
		}
		if size < 4096 || size > 1<<31-1 {
			return fmt.Errorf("%w: commitlog file %s is %d bytes, not a usable file size", ErrCorruptStore, where, size)
		}
		s.cfg.CommitLogFileSize = size
	}
	return s.detectConsumeQueueFileSize()
}

// detectConsumeQueueFileSize takes ConsumeQueueUnits from the first
// ConsumeQueue file found; every queue must agree (load checks each
// file against it).
func (s *Store) detectConsumeQueueFileSize() error {
	topics, err := s.fs.ListDirs(consumeQueueDir)
	if err != nil {
		return nil // no queues (or unreadable: loadConsumeQueues reports it)
	}
	for _, topic := range topics {
		ids, err := s.fs.ListDirs(path.Join(consumeQueueDir, topic))
		if err != nil {
			continue
		}
		for _, id := range ids {
			want := s.cfg.ConsumeQueueUnits * CQUnitSize
			if s.cfg.ConsumeQueueUnits == DefaultConsumeQueueUnits {
				want = 0
			}
			size, where, err := s.existingFileSize(path.Join(consumeQueueDir, topic, id), want)
			if err != nil {
				return err
			}
			if size < 0 {
				continue
			}
			if size%CQUnitSize != 0 || size < 2*CQUnitSize {
				return fmt.Errorf("%w: consume queue file %s is %d bytes, not a whole number of %d-byte units",
					ErrCorruptStore, where, size, CQUnitSize)
			}
			units := size / CQUnitSize
			if units != s.cfg.ConsumeQueueUnits {
				if explicit := s.cfg.ConsumeQueueUnits != DefaultConsumeQueueUnits; explicit {
					return fmt.Errorf("%w: consume queue file %s holds %d units, config says %d",
						ErrCorruptStore, where, units, s.cfg.ConsumeQueueUnits)
				}
				s.cfg.ConsumeQueueUnits = units
			}
			return nil
		}
	}
	return nil
}

// existingFileSize returns the size of the first non-empty segment in dir
// and its path, or -1 when dir holds none (names the store does not write
// are skipped; load warns about them). Empty segments say nothing of the
// size: they are new files whose preallocation a power cut took back
// before any sync (the name reached the disk, the size did not), and load
// pads them to the configured size (mappedFileQueue.shortTail). A last
// segment shorter than want (the size the config gives) counts as want:
// it is truncated, and load pads it.
func (s *Store) existingFileSize(dir string, want int64) (int64, string, error) {
	names, err := s.fs.List(dir)
	if err != nil {
		return -1, "", nil
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !isSegmentName(n) })
	if len(names) == 0 {
		return -1, "", nil
	}
	for i, n := range names {
		p := path.Join(dir, n)
		size, err := s.fs.Stat(p)
		if err != nil {
			return -1, p, fmt.Errorf("stat %s: %w", p, err)
		}
		switch {
		case size == 0:
			continue
		case i == len(names)-1 && size < want:
			return want, p, nil
		}
		return size, p, nil
	}
	return -1, "", nil
}

func (s *Store) markRunning() error {
	seg, err := s.fs.Create(abortFile, 0)
	if errors.Is(err, backend.ErrExist) {
		err = nil
	} else if err == nil {
		err = seg.Close()
	}
	if err == nil {
		err = s.fs.SyncDir(".")
	}
	if err != nil {
		return fmt.Errorf("create abort marker: %w", err)
	}
	return nil
}

func (s *Store) start() {
	if s.cfg.hooks.Manual {
		return
	}
	q := s.commitLog.q
	q.alloc = newAllocator(q)
	if last := q.lastFile(); last != nil {
		q.alloc.prefaultAhead(last, last.wrote.Load())
		q.alloc.prepare(last.fileFromOffset + q.fileSize)
	} else {
		// An empty CommitLog's first file too, so that the first put does
		// not create it (and sync its directories) under the put lock.
		q.alloc.prepareFirst()
	}
	s.reput.Start()
	s.flusher = startCommitLogFlusher(s)
	s.cqFlusher = startTicker(s.cfg.Clock, s.cfg.FlushIntervalConsumeQueue, s.consumeQueueFlushTick)
	s.cleaner = s.startCleanService(s.cfg.Retention)
}

// Config returns the configuration in effect (defaults filled in, file
// sizes as found on disk).
func (s *Store) Config() Config { return s.cfg }

// Recovery returns what recovery found and did when the store was opened.
func (s *Store) Recovery() RecoveryReport { return s.recovery }

// CommitLog returns the store's CommitLog, for its offsets and file size.
func (s *Store) CommitLog() *CommitLog { return s.commitLog }

// Checkpoint returns the store's checkpoint file.
func (s *Store) Checkpoint() Checkpoint { return s.checkpoint }

// writable returns nil if puts are allowed.
func (s *Store) writable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.failed.Load() == nil && s.health.dispatchErr.Load() == nil && s.health.diskFull.Load() == nil {
		return nil
	}
	return s.writableAt(s.now())
}

// fail turns the store read-only for good after a failed sync (or a
// storage error on the put path other than a full disk).
func (s *Store) fail(err error) {
	if s.failed.CompareAndSwap(nil, &err) {
		s.health.flushErrors.Add(1)
		s.cfg.Logger.Error("store turned read-only: puts are refused until the store is reopened", "err", err)
	}
}

// Put stores one message. With SyncFlush (and the WAIT property not
// "false") it returns only after the message is synced, or ErrFlushTimeout
// when the sync takes longer than SyncFlushTimeout (the message is stored
// all the same, as in RocketMQ); see Config.SyncFlushTimeout.
func (s *Store) Put(ctx context.Context, m *Message) (PutResult, error) {
	return s.put(ctx, m, nil)
}

// PutUnhurried is Put for a record that nobody reads through its
// ConsumeQueue soon (pop's revive-log records, read back when the broker
// starts): under AsyncFlush it does not wake the dispatcher, which
// dispatches the record with the next put that does, when someone waits
// for it (WaitDispatched), at the next CommitLog flush
// (FlushIntervalCommitLog) or at Close, whichever comes first. A put
// that wakes the dispatcher costs a switch to its goroutine and back
// for each record. Under SyncFlush it is Put.
func (s *Store) PutUnhurried(ctx context.Context, m *Message) (PutResult, error) {
	return s.putWith(ctx, m, nil, true)
}

func (s *Store) put(ctx context.Context, m *Message, o *origin) (PutResult, error) {
	return s.putWith(ctx, m, o, false)
}

func (s *Store) putWith(ctx context.Context, m *Message, o *origin, unhurried bool) (PutResult, error) {
	s.lifecycle.RLock()
	if err := s.writable(); err != nil {
		s.lifecycle.RUnlock()
		return PutResult{}, err
	}
	if s.commitLog.rec.on {
		s.lifecycle.RUnlock()
		return PutResult{}, fmt.Errorf("%w: a store of replicated records takes records, not puts", ErrRecords)
	}
	res, err := s.commitLog.put(m, o)
	s.lifecycle.RUnlock()
	if err != nil {
		return res, s.putError(err)
	}
	s.putSucceeded()
	// WAIT only matters under SyncFlush; reading it costs a scan of the
	// properties.
	wait := s.cfg.FlushDiskType == SyncFlush && !m.PropertyIs(record.PropertyWaitStoreMsgOK, "false")
	return res, s.afterPut(ctx, res, wait, unhurried)
}

// PutBatch stores messages for one topic and queue as consecutive records
// with consecutive queue offsets, all in one CommitLog file.
func (s *Store) PutBatch(ctx context.Context, msgs []*Message) (PutResult, error) {
	return s.putBatch(ctx, msgs, nil)
}

func (s *Store) putBatch(ctx context.Context, msgs []*Message, o *origin) (PutResult, error) {
	s.lifecycle.RLock()
	if err := s.writable(); err != nil {
		s.lifecycle.RUnlock()
		return PutResult{}, err
	}
	if s.commitLog.rec.on {
		s.lifecycle.RUnlock()
		return PutResult{}, fmt.Errorf("%w: a store of replicated records takes records, not puts", ErrRecords)
	}
	res, err := s.commitLog.putBatch(msgs, o)
	s.lifecycle.RUnlock()
	if err != nil {
		return res, s.putError(err)
	}
	s.putSucceeded()
	return res, s.afterPut(ctx, res, true, false)
}

// putError turns a storage failure into read-only mode; message errors
// (illegal, too large) leave the store as it is, and a full disk refuses
// puts only until space is freed.
func (s *Store) putError(err error) error {
	if errors.Is(err, ErrMessageIllegal) || errors.Is(err, ErrPropertiesTooLarge) || errors.Is(err, ErrBatch) {
		return err
	}
	if isDiskFull(err) {
		return s.diskFull(err)
	}
	s.fail(err)
	return err
}

// afterPut wakes the dispatcher for a put under AsyncFlush (unless the
// record is unhurried), or has a SyncFlush put's record synced (and
// dispatched).
func (s *Store) afterPut(ctx context.Context, res PutResult, wait, unhurried bool) error {
	if s.cfg.hooks.Manual {
		if s.cfg.FlushDiskType == SyncFlush && wait {
			return s.FlushCommitLog(0)
		}
		return nil
	}
	end := res.WroteOffset + int64(res.WroteBytes)
	if s.cfg.FlushDiskType != SyncFlush {
		if !unhurried {
			s.reput.Wake()
		}
		return nil
	}
	// The group commit wakes the dispatcher once the message is synced.
	if !wait {
		s.flusher.request(end)
		return nil
	}
	return s.flusher.waitFlushed(ctx, end)
}

// WaitDispatched blocks until every record below CommitLog offset off is in
// its ConsumeQueue (a put's WroteOffset+WroteBytes), so that it can be read
// with GetMessage.
func (s *Store) WaitDispatched(ctx context.Context, off int64) error {
	if s.cfg.hooks.Manual {
		if _, err := s.dispatchPass(); err != nil {
			return err
		}
	}
	// An unhurried put did not wake the dispatcher.
	if !s.cfg.hooks.NoUnhurriedWakes {
		s.reput.Wake()
	}
	return s.reput.WaitFor(ctx, off)
}

// dispatchPass runs one reput pass in the caller's goroutine (for stores in
// manual mode, which dispatch only when asked) and returns how many records it dispatched.
func (s *Store) dispatchPass() (int, error) {
	// Held shared so that Close cannot shut the files down under a pass
	// (a pass on shut-down queues would create new ConsumeQueue files).
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	// A failure sets the dispatch-failing flag through the hooks; the
	// next pass that succeeds clears it.
	return s.reput.DoReput()
}

// Redispatch moves the dispatcher back to CommitLog offset from (a record
// boundary) and replays everything after it through every dispatcher, in
// the caller's goroutine, returning how many records it replayed. The
// dispatchers are idempotent, so this changes nothing that is already in
// place; tools and tests use it to check exactly that.
func (s *Store) Redispatch(from int64) (int, error) {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.reput.SetReputFrom(from)
	return s.reput.DoReput()
}

// DispatchBehindBytes returns how many CommitLog bytes are not yet in the
// ConsumeQueues.
func (s *Store) DispatchBehindBytes() int64 { return s.reput.BehindBytes() }

// buildConsumeQueue is the ConsumeQueue dispatcher (RocketMQ's
// CommitLogDispatcherBuildConsumeQueue).
func (s *Store) buildConsumeQueue(req *dispatch.Request) error {
	put, err := s.putUnit(req, nil)
	if put {
		s.checkpoint.setLogics(req.StoreTimestamp)
	}
	return err
}

// putUnit writes req's unit into its ConsumeQueue, and reports whether the
// record belongs in one; the caller updates the checkpoint. last, when not
// nil, caches the queue of the previous call (abnormal recovery's scan
// dispatches runs of records of a few queues), sparing a table lookup.
func (s *Store) putUnit(req *dispatch.Request, last **consumeQueue) (bool, error) {
	if !req.Dispatchable() || s.deletedBelow(req.Topic, req.CommitLogOffset) {
		return false, nil
	}
	var cq *consumeQueue
	if last != nil && *last != nil && (*last).queueID == req.QueueID && (*last).topic == string(req.Topic) {
		cq = *last
	} else {
		var err error
		if cq, err = s.queues.findOrCreate(s, req.Topic, req.QueueID); err != nil {
			return false, err
		}
		if last != nil {
			*last = cq
		}
	}
	return s.putUnitTo(cq, req)
}

// putUnitTo is putUnit for a dispatchable record whose queue, cq, the
// caller already has.
func (s *Store) putUnitTo(cq *consumeQueue, req *dispatch.Request) (bool, error) {
	_, err := cq.putMessagePositionInfo(req.CommitLogOffset, req.MsgSize, req.TagsCode, req.ConsumeQueueOffset)
	if errors.Is(err, errQueueGap) && len(s.recovery.Damaged) > 0 {
		// The missing units belong to damaged records recovery skipped.
		if err = s.fillDamagedUnits(cq, req); err == nil {
			_, err = cq.putMessagePositionInfo(req.CommitLogOffset, req.MsgSize, req.TagsCode, req.ConsumeQueueOffset)
		}
	}
	return err == nil, err
}

// Close drains dispatch, flushes everything, writes the checkpoint, removes
// the abort marker and releases the files. It is idempotent; after it every
// call returns ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.cleaner != nil {
		s.cleaner.close() // before the lock: a clean round may be running
	}
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	var errs []error
	if s.flusher != nil {
		errs = append(errs, s.flusher.close())
	}
	if s.cqFlusher != nil {
		s.cqFlusher.close()
	}
	if s.cfg.hooks.Manual && s.failed.Load() == nil {
		// Nothing dispatched in the background: drain here, so that a
		// Manual store also closes cleanly (RocketMQ's shutdown waits
		// for dispatchBehindBytes to reach 0).
		if _, err := s.reput.DoReput(); err != nil {
			s.fail(err)
			errs = append(errs, err)
		}
	}
	if err := s.reput.Close(); err != nil {
		errs = append(errs, err)
	}
	clean := s.failed.Load() == nil && s.reput.BehindBytes() == 0
	if clean {
		if err := s.flushAll(); err != nil {
			errs = append(errs, err)
			clean = false
		}
	}
	if clean {
		// Only a store whose files are complete may claim a clean exit.
		if err := s.fs.Remove(abortFile); err != nil && !errors.Is(err, backend.ErrNotExist) {
			errs = append(errs, err)
		} else if err := s.fs.SyncDir("."); err != nil {
			errs = append(errs, err)
		}
	}
	s.commitLog.q.shutdown()
	s.queues.shutdownAll()
	errs = append(errs, s.checkpoint.close(), s.lock.Unlock())
	return errors.Join(errs...)
}

// errAbandoned is the failure a SyncFlush put waiting on an abandoned
// store returns.
var errAbandoned = fmt.Errorf("%w: abandoned", ErrClosed)

// abandonRunning stops the store's goroutines and releases its files and lock
// without flushing, dispatching or writing anything more, leaving the abort
// marker: what a killed process leaves behind. On memfs, opening
// memfs.New(sameAfero) afterwards is a power cut in which nothing unsynced
// survived. Crash tests use it so that the old store's services can never
// touch the durable image again. After it every call returns
// ErrClosed; Close does nothing.
func (s *Store) abandonRunning() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	err := errAbandoned
	s.failed.CompareAndSwap(nil, &err)
	if s.cleaner != nil {
		s.cleaner.close()
	}
	if s.flusher != nil {
		s.flusher.halt()
	}
	if s.cqFlusher != nil {
		s.cqFlusher.close()
	}
	// A killed process reports nothing.
	_ = s.reput.Halt()
	s.commitLog.q.shutdown()
	s.queues.shutdownAll()
	_ = s.checkpoint.close()
	_ = s.lock.Unlock()
}

// flushAll syncs the CommitLog, every ConsumeQueue and the checkpoint.
func (s *Store) flushAll() error {
	if err := s.flushCommitLog(0); err != nil {
		return err
	}
	return s.flushConsumeQueues(0)
}
