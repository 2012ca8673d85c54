package timer

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// ErrClosed reports use of a closed (or not started) service.
var ErrClosed = errors.New("timer: closed")

// Service is the timer message service (RocketMQ's TimerMessageStore).
type Service struct {
	fs    backend.FS
	cfg   Config
	store *engine.Store

	// Owned by the loop goroutine (or the Manual caller).
	log   *timerLog
	wheel *wheel
	st    state
	// delivered holds the source offsets of deliveries that a slot must
	// not make again, each with the CommitLog position of its delivered
	// record (-1: a put of this service whose slot is in progress, whose
	// failure retries the whole slot): those of the slot in progress and
	// those found in the CommitLog (by recovery, or made by another
	// leader). An offset leaves when its slot is done.
	delivered map[int64]int64
	// seenTo is the CommitLog position up to which every delivery is
	// accounted for: made by this service, or in delivered until its
	// slot is done. A replica on standby reads the CommitLog from there
	// for the leader's deliveries; an elected one, for those it has not
	// read yet.
	seenTo   int64
	lastCkpt int64         // ms, clock time of the last checkpoint
	saving   *saveJob      // the checkpoint in flight
	next     *preparedSlot // the next slot, read ahead
	// standby is set while the service follows another leader: from
	// Start on a replica (until a step finds it leading) and from a step
	// that found it on standby. The first step as leader reads the
	// CommitLog from seenTo first.
	standby bool
	// rescan is set by a failed delivery put, which may have stored its
	// message: the next step reads the CommitLog from seenTo (the end
	// before that put) first.
	rescan   bool
	lateness Lateness // of the deliveries since Start
	scanned  int64    // records read for deliveries since New (tests)
	// savedQueueOffset and savedPending are the queue offset and the
	// pending count of the last checkpoint taken.
	savedQueueOffset, savedPending int64

	// mu guards the copies other goroutines read.
	mu struct {
		sync.Mutex
		pending  map[string]int64
		readTime int64
		stats    Stats
	}

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// state is what a checkpoint saves.
type state struct {
	queueOffset int64
	readTime    int64
	scanFrom    int64
	pending     map[string]int64
}

// New returns a service whose Dispatch hook can be given to engine.Open;
// Start begins once the store is open.
func New(fs backend.FS, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{fs: fs, cfg: cfg.withDefaults(), wake: make(chan struct{}, 1)}, nil
}

// Config returns the configuration with its defaults.
func (s *Service) Config() Config { return s.cfg }

// Dispatch is the arrival hook: a new timer message may be due before
// the slot the service sleeps for.
func (s *Service) Dispatch(req *dispatch.Request) error {
	if string(req.Topic) == record.TimerTopic {
		s.Wake()
	}
	return nil
}

// Wake makes the service look at the timer queue now. It never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start recovers the timer state and starts the service goroutine (none
// in Manual mode).
func (s *Service) Start(store *engine.Store) error {
	s.store = store
	if err := s.recover(); err != nil {
		s.closeFiles()
		s.store = nil
		return err
	}
	s.standby = s.cfg.Standby != nil
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	if s.cfg.svc.Manual {
		close(s.done)
		return nil
	}
	go s.loop(ctx)
	return nil
}

// Close stops the service, waits for its goroutine, enqueues what
// arrived and takes a checkpoint. It is idempotent.
func (s *Service) Close() error {
	if !s.stop() {
		return nil
	}
	// What arrived since the last step goes into the TimerLog first, so
	// that the checkpoint counts it.
	var err error
	if s.cfg.Standby == nil || !s.cfg.Standby() {
		err = s.enqueue(context.Background())
	}
	if err == nil {
		err = s.Checkpoint()
	}
	s.closeFiles()
	s.store = nil
	return err
}

// Abandon stops the service without saving anything: what a killed
// process leaves (crash tests). It is idempotent.
func (s *Service) Abandon() {
	if s.stop() {
		if s.saving != nil {
			// A process dies with its threads: the writer stops, its
			// result is dropped.
			if err := <-s.saving.done; err != nil {
				s.cfg.Logger.Debug("timer: abandoned checkpoint failed", "err", err)
			}
			s.saving = nil
		}
		s.closeFiles()
		s.store = nil
	}
}

func (s *Service) stop() bool {
	if s.cancel == nil {
		return false
	}
	s.cancel()
	<-s.done
	s.cancel = nil
	return true
}

func (s *Service) closeFiles() {
	if s.log != nil {
		s.log.close()
	}
	if s.wheel != nil {
		_ = s.wheel.close()
	}
	s.log, s.wheel = nil, nil
}

func (s *Service) loop(ctx context.Context) {
	defer close(s.done)
	for {
		wait, err := s.Advance(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("timer: delivery failed; retrying", "err", err)
			wait = 100 * time.Millisecond
		}
		var timer clockwork.Timer
		var tc <-chan time.Time
		if wait >= 0 {
			timer = s.cfg.Clock.NewTimer(wait)
			tc = timer.Chan()
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-tc:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// Advance enqueues the new timer messages, delivers every slot due now
// and takes a checkpoint when one is due. It returns how long until the
// next slot is due (-1: nothing pending). In Manual mode the owner calls
// it (after dispatching the store) and Checkpoint.
func (s *Service) Advance(ctx context.Context) (time.Duration, error) {
	if s.store == nil || s.log == nil {
		return 0, ErrClosed
	}
	if s.cfg.Standby != nil && s.cfg.Standby() {
		if !s.standby {
			// Deposed: every put of this service returned, so its
			// deliveries are in the CommitLog up to its end (but one
			// that failed may be stored later); the next leader's come
			// after.
			s.standby, s.next = true, nil
			if !s.rescan {
				s.seenTo = s.store.CommitLog().MaxOffset()
			}
			s.rescan = false
		}
		if err := s.follow(ctx); err != nil {
			return 0, err
		}
	} else {
		if s.standby || s.rescan {
			// Elected (Elected wakes the service): the former leader's
			// deliveries that the last step on standby did not read are
			// in the replicated CommitLog, whose committed entries are
			// all applied before the node takes writes. After a failed
			// put: the message it may have stored.
			s.standby, s.rescan, s.next = false, false, nil
			if !s.cfg.broken.NoDedup {
				if err := s.scanDeliveries(s.seenTo); err != nil {
					return 0, err
				}
			}
		}
		if err := s.enqueue(ctx); err != nil {
			return 0, err
		}
		if err := s.deliverDue(ctx); err != nil {
			return 0, err
		}
	}
	if err := s.finishCheckpoint(false); err != nil {
		s.cfg.Logger.Warn("timer: checkpoint failed; retrying", "err", err)
	}
	// A replica on standby with nothing to follow takes no checkpoint (an
	// idle leader takes none either: it does not step): recovery finds
	// its scan start from the timer queue (scanStart).
	idle := s.standby && s.saved()
	if !s.cfg.svc.Manual && s.saving == nil && !idle &&
		(s.cfg.now()-s.lastCkpt >= s.cfg.CheckpointInterval.Milliseconds() || len(s.wheel.dirty) >= maxDirtySlots) {
		s.startCheckpoint()
	}
	if s.standby {
		// Polled: a replica learns of neither the leader's deliveries nor
		// its own election here (Elected wakes it).
		return time.Second, nil
	}
	if s.pendingTotal() == 0 && s.store.MaxOffsetInQueue(record.TimerTopic, 0) <= s.st.queueOffset {
		if !s.cfg.svc.Manual && (!s.saved() || s.saving != nil) {
			// Idle, but the last changes are not saved yet.
			return s.cfg.CheckpointInterval, nil
		}
		return -1, nil
	}
	return time.Duration(max(0, s.st.readTime-s.cfg.now())) * time.Millisecond, nil
}

// saved reports whether the last checkpoint taken holds the state of a
// service with nothing pending (the read time and scan start aside:
// recovery finds them again, see scanStart), so that an idle service
// need not take another (and the pending counts a tool reads from it are
// current).
func (s *Service) saved() bool {
	return s.pendingTotal() == 0 && s.savedPending == 0 && len(s.wheel.dirty) == 0 && s.st.queueOffset == s.savedQueueOffset
}

// Elected tells the service that its replica now leads its group and
// takes writes: the next step, at once, reads the former leader's last
// deliveries from the replicated CommitLog and then delivers what is
// due. It never blocks.
func (s *Service) Elected() { s.Wake() }

// Pending returns the pending timer messages of each real topic.
func (s *Service) Pending() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.pending)
}

// ReadTime returns the next slot time to deliver: every slot before it
// is delivered.
func (s *Service) ReadTime() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.readTime
}

func (s *Service) pendingTotal() int64 {
	var n int64
	for _, v := range s.st.pending {
		n += v
	}
	return n
}

// publish copies the state other goroutines read.
func (s *Service) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.pending = maps.Clone(s.st.pending)
	s.mu.readTime = s.st.readTime
	s.mu.stats = Stats{Pending: s.pendingTotal(), DirtySlots: len(s.wheel.dirty) + len(s.wheel.saving), Delivered: len(s.delivered),
		LogBytes: s.log.diskBytes(), WheelBytes: s.wheel.seg.Size(), Lateness: s.lateness}
	if s.next != nil {
		s.mu.stats.ReadAheadBytes = s.next.bytes
	}
}

// Stats returns the timer store's footprint and the deliveries' lateness
// as of the last step.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stats
}

// Stats is the timer store's footprint and its deliveries.
type Stats struct {
	// Pending is the count of pending messages.
	Pending int64
	// DirtySlots and Delivered are the in-memory entries: the wheel slots
	// changed since the checkpoint and the deliveries remembered.
	DirtySlots, Delivered int
	// ReadAheadBytes estimates the messages of the next slot, read ahead
	// of its time.
	ReadAheadBytes int64
	// LogBytes and WheelBytes are the sizes of the TimerLog and wheel
	// files.
	LogBytes, WheelBytes int64
	// Lateness is the lateness of the messages delivered since the
	// service started; its Count is the deliveries (a message the store
	// refused for good is dropped and not counted).
	Lateness Lateness
}

// MemoryBytes estimates the heap the service holds for its state (map
// entries at about 64 bytes, and the slot read ahead).
func (st Stats) MemoryBytes() int64 {
	return int64(st.DirtySlots+st.Delivered)*64 + st.ReadAheadBytes
}
