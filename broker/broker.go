package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/internal/brokerops/link"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/broker/longpoll"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/broker/pop"
	"github.com/rocketstore/rocketstore/broker/schedule"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/faultlog"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// Broker is the consumption layer over one store.
type Broker struct {
	cfg    Config
	fs     backend.FS
	lock   *engine.StoreLock // held from Open to the end of Close
	store  *engine.Store
	logger *slog.Logger
	// now reads the store's clock (Config.Store.Clock) in milliseconds.
	now func() int64

	topics    *config.TopicManager
	groups    *config.GroupManager
	offsets   *offset.Manager
	consumers *consumerManager
	hold      *longpoll.Hold
	schedule  *schedule.Service
	timer     *timer.Service
	index     *index.Service // nil when the index is disabled
	filters   *consumerFilters
	tx        *transaction.Service
	pop       *pop.Service
	arrivals  *pop.Arrivals // wakes long-polling pop receives
	sqlCache  sqlCache
	stats     Stats
	// topicFaults: topics a send would create whose config could not be
	// saved (a full disk), logged once a minute while it lasts.
	topicFaults faultlog.Log

	closed  atomic.Bool
	stop    chan struct{}
	done    chan struct{}
	closeMu sync.Mutex

	// hooks are the test switches (set by export_test.go).
	hooks hooks.Broker
}

// manual reports whether the store runs in manual mode (internal/hooks):
// then the broker starts no goroutine either.
func (b *Broker) manual() bool { return hooks.EngineOf(&b.cfg.Store).Manual }

// Open loads the broker's configuration files from fs, opens the store on
// fs with the index, long-poll and delayed-delivery dispatchers, clamps the
// offsets to the recovered queues and starts the background services.
func Open(fs backend.FS, cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// The store's lock comes first: the config files, the index (whose
	// recovery deletes files) and the engine all belong to the process
	// that holds it, and a second broker on a held store must fail
	// before it reads or changes any of them.
	lk, err := engine.LockStore(fs)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b := &Broker{cfg: cfg, fs: fs, logger: cfg.Store.Logger, consumers: newConsumerManager(),
		hold: longpoll.New(!cfg.ShortPolling, cfg.Store.Clock), lock: lk, now: clocks.Millis(cfg.Store.Clock)}
	b.topicFaults.Logger, b.topicFaults.Level, b.topicFaults.Clock = b.logger, slog.LevelError, cfg.Store.Clock
	if err := b.loadConfig(); err != nil {
		return nil, errors.Join(err, lk.Unlock())
	}
	if err := b.openStore(); err != nil {
		return nil, errors.Join(err, lk.Unlock())
	}
	if err := b.startServices(); err != nil {
		return nil, errors.Join(err, b.closeStore())
	}
	return b, nil
}

func (b *Broker) loadConfig() error {
	var err error
	b.topics, err = config.LoadTopics(b.fs, config.TopicOptions{AutoCreateTopicEnable: !b.cfg.DisableAutoCreateTopic,
		DefaultTopicQueueNums: b.cfg.DefaultTopicQueueNums, ScheduleQueueNums: len(b.cfg.Store.DelayLevels),
		Clock: b.cfg.Store.Clock, SingleQueueTopics: b.systemTopics(), Logger: b.logger})
	if err != nil {
		return err
	}
	if b.groups, err = config.LoadGroups(b.fs, !b.cfg.DisableAutoCreateSubscriptionGroup, b.cfg.Store.Clock, b.logger); err != nil {
		return err
	}
	if b.offsets, err = offset.Load(b.fs, offset.File, b.logger); err != nil {
		return err
	}
	b.offsets.SetClock(b.cfg.Store.Clock)
	b.filters, err = loadConsumerFilters(b.fs, b.cfg.Store.Clock, b.logger.Warn)
	return err
}

// replicatedTimerPuts is how many delivery puts of one timer slot a
// replicated group's leader has in flight: each waits for a Raft round,
// so one at a time would deliver a few hundred timers a second.
const replicatedTimerPuts = 64

// openStore opens the index first (recovery dispatches to it), then the
// engine with the broker's dispatchers.
func (b *Broker) openStore() error {
	sc := hooks.ManualService(schedule.Config{Levels: b.cfg.Store.DelayLevels, Logger: b.logger, Clock: b.cfg.Store.Clock}, b.manual())
	if w := b.cfg.Writer; w != nil {
		sc.Put, sc.Standby = w.Put, func() bool { return !w.Writable() }
	}
	b.schedule = schedule.New(b.fs, sc)
	tc := b.cfg.Timer
	tc.Clock = b.cfg.Store.Clock
	if tc.Logger == nil {
		tc.Logger = b.logger
	}
	if w := b.cfg.Writer; w != nil {
		tc.Put, tc.Standby = w.Put, func() bool { return !w.Writable() }
		if tc.PutsInFlight == 0 {
			tc.PutsInFlight = replicatedTimerPuts
		}
	}
	var err error
	if b.timer, err = timer.New(b.fs, hooks.ManualService(tc, b.manual())); err != nil {
		return err
	}
	b.arrivals = pop.NewArrivals()
	ds := []dispatch.Dispatcher{b.hold, b.schedule, b.timer, b.arrivals}
	if !b.cfg.DisableMessageIndex {
		lastExitOK, indexTs, err := recoveryHint(b.fs)
		if err != nil {
			return fmt.Errorf("broker: read recovery hints: %w", err)
		}
		if b.index, err = index.Open(b.fs, b.cfg.Index, lastExitOK, indexTs); err != nil {
			return err
		}
		ds = append([]dispatch.Dispatcher{b.index}, ds...)
	}
	s, err := engine.OpenLocked(b.lock, b.fs, b.cfg.Store, ds...)
	if err != nil {
		if b.index != nil {
			err = errors.Join(err, b.index.Close())
		}
		return err
	}
	b.store = s
	if b.index != nil {
		b.index.SetCheckpoint(s.Checkpoint())
		if err := b.reindex(); err != nil {
			return errors.Join(err, b.closeFiles())
		}
	}
	return nil
}

// reindex makes the index cover the recovered CommitLog. The engine's
// recovery replays only from its checkpoint, but after a crash the index
// may have lost more (a deleted file, or a file whose unsynced tail was
// lost), or hold entries past the recovered end; index.Reconcile says
// what to replay, and Redispatch replays it through every dispatcher
// (all idempotent).
func (b *Broker) reindex() error {
	cl := b.store.CommitLog()
	from, err := b.index.Reconcile(cl.MinOffset(), cl.MaxOffset())
	if err != nil || from < 0 {
		return err
	}
	n, err := b.store.Redispatch(from)
	if err != nil {
		return fmt.Errorf("broker: re-index from %d: %w", from, err)
	}
	b.logger.Info("index rebuilt from the CommitLog", "from", from, "records", n)
	return nil
}

func (b *Broker) startServices() error {
	if n := b.offsets.Clamp(b.store.MaxOffsetInQueue); n > 0 {
		if err := b.offsets.Persist(); err != nil {
			return err
		}
	}
	if err := b.openTransactions(); err != nil {
		return err
	}
	if err := b.openPop(); err != nil {
		b.tx.Close()
		return err
	}
	if err := b.schedule.Start(b.store); err != nil {
		b.tx.Close()
		b.pop.Close()
		return err
	}
	if err := b.timer.Start(b.store); err != nil {
		b.tx.Close()
		b.pop.Close()
		return errors.Join(err, b.schedule.Close())
	}
	b.stop, b.done = make(chan struct{}), make(chan struct{})
	if b.manual() {
		// No background work: the owner calls PersistOffsets,
		// DeliverDelayed and the store's flush methods.
		close(b.done)
		return nil
	}
	go b.persistLoop()
	return nil
}

// persistLoop persists consumer offsets, delay offsets and the index on
// their intervals (RocketMQ's scheduled persist tasks).
func (b *Broker) persistLoop() {
	defer close(b.done)
	clock := b.cfg.Store.Clock
	co := clock.NewTicker(b.cfg.FlushConsumerOffsetInterval)
	defer co.Stop()
	do := clock.NewTicker(b.cfg.FlushDelayOffsetInterval)
	defer do.Stop()
	// A full disk fails every attempt: one line a minute each, and the end.
	filterFaults := faultlog.Log{Logger: b.logger, Level: slog.LevelError, Clock: clock}
	indexFaults := faultlog.Log{Logger: b.logger, Level: slog.LevelError, Clock: clock}
	delayFaults := faultlog.Log{Logger: b.logger, Level: slog.LevelError, Clock: clock}
	for {
		select {
		case <-b.stop:
			return
		case <-co.Chan():
			_ = b.offsets.PersistScheduled() // logs its failures, rate-limited
			logFault(&filterFaults, b.filters.persist(), "persist consumer filters")
			if b.index != nil {
				logFault(&indexFaults, b.index.Flush(), "flush index")
			}
		case <-do.Chan():
			logFault(&delayFaults, b.schedule.Persist(), "persist delay offsets")
		}
	}
}

// logFault logs a background task's result on its fault log: a failure
// rate-limited, the first success after failures once.
func logFault(l *faultlog.Log, err error, task string) {
	if err != nil {
		l.Failed(task+" failed", err)
	} else if l.Failing() {
		l.Resumed(task + " works again")
	}
}

// PersistOffsets saves consumer and delay offsets now (what the periodic
// tasks do). Each file is written only if its table changed.
func (b *Broker) PersistOffsets() error {
	return errors.Join(b.offsets.Persist(), b.schedule.Persist())
}

// PersistConsumerOffsets saves the consumer offsets now (the
// flushConsumerOffsetInterval task).
func (b *Broker) PersistConsumerOffsets() error {
	return errors.Join(b.offsets.Persist(), b.filters.persist())
}

// PersistDelayOffsets syncs the CommitLog and saves the delay offsets now
// (the flushDelayOffsetInterval task).
func (b *Broker) PersistDelayOffsets() error { return b.schedule.Persist() }

// DeliverDelayed runs one delayed-delivery pass in the caller's
// goroutine: it dispatches the store when it is in manual mode, delivers every
// message due now (delay levels and timer messages), and dispatches the
// deliveries. It returns how long until the next message is due (-1: none). Brokers in manual mode use it in
// place of the delivery goroutine.
func (b *Broker) DeliverDelayed(ctx context.Context) (time.Duration, error) {
	if b.closed.Load() {
		return 0, ErrClosed
	}
	if b.manual() {
		if _, err := engineops.Of(b.store).Dispatch(); err != nil {
			return 0, err
		}
	}
	next, err := b.schedule.DeliverDue(ctx)
	if err != nil {
		return 0, err
	}
	tnext, err := b.timer.Advance(ctx)
	if err != nil {
		return 0, err
	}
	if next < 0 || tnext >= 0 && tnext < next {
		next = tnext
	}
	if b.manual() {
		if _, err := engineops.Of(b.store).Dispatch(); err != nil {
			return 0, err
		}
	}
	return next, nil
}

func init() { link.Abandon = func(b any) { b.(*Broker).abandon() } }

// abandon stops the broker as a killed process would (brokerops.Abandon).
func (b *Broker) abandon() {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if !b.closed.CompareAndSwap(false, true) {
		return
	}
	b.hold.Close()
	close(b.stop)
	<-b.done
	b.tx.Close()
	b.pop.Close()
	b.schedule.Abandon()
	b.timer.Abandon()
	engineops.Of(b.store).Abandon()
	if b.index != nil {
		b.index.Abandon()
	}
}

// Close releases held pulls, stops the services, persists the offsets,
// closes the store and then the index. It is idempotent.
func (b *Broker) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.hold.Close()
	close(b.stop)
	<-b.done
	b.tx.Close()
	b.pop.Close()
	errs := []error{b.schedule.Close(), b.timer.Close(), b.offsets.Persist(), b.filters.persist()}
	return errors.Join(append(errs, b.closeStore())...)
}

// closeStore closes the engine (which drains dispatch into the index and
// writes the checkpoint), then syncs and closes the index.
func (b *Broker) closeStore() error {
	return errors.Join(b.closeFiles(), b.lock.Unlock())
}

// closeFiles is closeStore without the release of the store's lock.
func (b *Broker) closeFiles() error {
	var errs []error
	if b.index != nil {
		// Make the index durable before the engine's final checkpoint
		// records its timestamp.
		errs = append(errs, b.index.Flush())
	}
	errs = append(errs, b.store.Close())
	if b.index != nil {
		errs = append(errs, b.index.Close())
	}
	return errors.Join(errs...)
}

// Store returns the engine.
func (b *Broker) Store() *engine.Store { return b.store }

// Topics returns the topic table.
func (b *Broker) Topics() *config.TopicManager { return b.topics }

// Groups returns the subscription-group table.
func (b *Broker) Groups() *config.GroupManager { return b.groups }

// Offsets returns the consumer offset table.
func (b *Broker) Offsets() *offset.Manager { return b.offsets }

// Schedule returns the delayed-delivery service.
func (b *Broker) Schedule() *schedule.Service { return b.schedule }

// Timer returns the timer message service.
func (b *Broker) Timer() *timer.Service { return b.timer }

// Index returns the index service (nil when disabled).
func (b *Broker) Index() *index.Service { return b.index }

// HeldPulls returns the number of pulls held now.
func (b *Broker) HeldPulls() int { return b.hold.Held() }

// WaitHeldPulls blocks until at least n pulls are held, ctx is done or the
// broker closes (ErrClosed).
func (b *Broker) WaitHeldPulls(ctx context.Context, n int) error {
	if err := b.hold.WaitHeld(ctx, n); err != nil {
		if errors.Is(err, longpoll.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}
