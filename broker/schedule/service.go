package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// ErrClosed reports use of a closed service.
var ErrClosed = errors.New("schedule: closed")

// Config configures a Service.
type Config struct {
	// Levels are the delays of levels 1..n; they must equal the store's
	// engine.Config.DelayLevels, which computed the deliver times.
	Levels []time.Duration
	// RetryInterval is the wait after a failed put (100 ms, as 4.9.4).
	RetryInterval time.Duration
	// Logger receives delivery problems.
	Logger *slog.Logger
	// Clock is the service's one clock: its Now is compared with deliver
	// times, so it must tell the store's time (engine.Config.Clock), and its
	// timers time the waits for the next due message and after a failed
	// put. Nil: the real clock; tests hand in a clockwork.FakeClock.
	Clock clockwork.Clock
	// Put, when set, stores the delivered messages instead of the
	// store's Put (a replicated group's log; see broker.Writer).
	Put func(ctx context.Context, m *engine.Message) (engine.PutResult, error)
	// Standby, when set and true, pauses delivery: a replica that is not
	// its group's leader delivers nothing, and its offsets come from the
	// leader (SetOffsets). Wake resumes.
	Standby func() bool

	// hooks are the test switches (internal/hooks.Service; Manual: the
	// owner calls DeliverDue).
	hooks hooks.Service
}

func init() { hooks.RegisterService(func(c *Config) *hooks.Service { return &c.hooks }) }

// Service is the delayed-delivery service.
type Service struct {
	fs    backend.FS
	cfg   Config
	store *engine.Store

	mu struct {
		sync.Mutex
		offsets map[int]int64
		version uint64
	}
	saveMu sync.Mutex
	saved  uint64

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a service whose Dispatch hook can be given to engine.Open;
// Start begins delivery once the store is open.
func New(fs backend.FS, cfg Config) *Service {
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	return &Service{fs: fs, cfg: cfg, wake: make(chan struct{}, 1)}
}

// Dispatch is the arrival hook: a new delayed message may be due before
// the one the service sleeps for.
func (s *Service) Dispatch(req *dispatch.Request) error {
	if string(req.Topic) == record.ScheduleTopic {
		s.Wake()
	}
	return nil
}

// Wake makes the delivery loop look at the queues now. It never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start loads and corrects the offsets and starts the delivery goroutine.
func (s *Service) Start(store *engine.Store) error {
	s.store = store
	if err := s.loadOffsets(); err != nil {
		return err
	}
	s.correctOffsets()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	if s.cfg.hooks.Manual {
		close(s.done)
		return nil
	}
	go s.loop(ctx)
	return nil
}

// Close stops delivery, waits for the goroutine and persists the offsets.
// It is idempotent.
func (s *Service) Close() error {
	if !s.stop() {
		return nil
	}
	return s.Persist()
}

// Abandon stops delivery without persisting anything: what a killed
// process leaves (crash tests). It is idempotent.
func (s *Service) Abandon() { s.stop() }

// stop cancels and waits for the delivery goroutine; it reports whether
// this call stopped it.
func (s *Service) stop() bool {
	if s.cancel == nil {
		return false
	}
	s.cancel()
	<-s.done
	s.cancel = nil
	return true
}

// DeliverDue delivers, in the caller's goroutine, every message due now
// and returns how long until the next one is due (-1: none pending). In
// Manual mode this is the only way messages are delivered; the caller
// must have dispatched the store (engine.Store.Dispatch) so that the
// schedule queues are up to date. ctx bounds the puts.
func (s *Service) DeliverDue(ctx context.Context) (time.Duration, error) {
	if s.store == nil {
		return 0, ErrClosed
	}
	return s.deliverDue(ctx)
}

func (s *Service) loop(ctx context.Context) {
	defer close(s.done)
	for {
		wait, err := s.deliverDue(ctx)
		if err != nil {
			return
		}
		// A timer only while something is pending, so that a fake clock
		// in tests counts exactly the wait for the next due message.
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

// head is the first undelivered message of a level.
type head struct {
	level     int
	offset    int64
	deliverAt int64
}

// deliverDue delivers every due message in due order and returns how long
// to sleep until the next one (-1: nothing pending).
func (s *Service) deliverDue(ctx context.Context) (time.Duration, error) {
	for {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if s.cfg.Standby != nil && s.cfg.Standby() {
			return -1, nil
		}
		h, ok := s.earliest()
		if !ok {
			return -1, nil
		}
		now := s.now()
		if h.deliverAt > now {
			return time.Duration(h.deliverAt-now) * time.Millisecond, nil
		}
		if err := s.deliver(ctx, h); err != nil {
			if errors.Is(err, engine.ErrClosed) || ctx.Err() != nil {
				return 0, ErrClosed
			}
			s.cfg.Logger.Warn("delayed delivery failed; retrying", "level", h.level, "offset", h.offset, "err", err)
			return s.cfg.RetryInterval, nil
		}
	}
}

// now is the time in ms that deliver times are compared with: the clock
// read as the store reads it to stamp records.
func (s *Service) now() int64 { return clocks.Millis(s.cfg.Clock)() }

// earliest returns the level head with the earliest deliver time.
func (s *Service) earliest() (head, bool) {
	var best head
	found := false
	now := s.now()
	for level := 1; level <= len(s.cfg.Levels); level++ {
		h, ok := s.peek(level, now)
		if ok && (!found || h.deliverAt < best.deliverAt) {
			best, found = h, true
		}
	}
	return best, found
}

// peek reads the deliver time of a level's next message, skipping offsets
// that no longer hold one.
func (s *Service) peek(level int, now int64) (head, bool) {
	qid := int32(level - 1)
	off := s.offset(level)
	for range 3 {
		res, err := s.store.GetMessage(record.ScheduleTopic, qid, off, 1, nil)
		if err != nil {
			return head{}, false
		}
		status, next := res.Status, res.NextBeginOffset
		var h head
		if status == engine.Found {
			h = head{level: level, offset: res.Messages[0].QueueOffset, deliverAt: res.Messages[0].TagsCode}
		}
		res.Release()
		switch status {
		case engine.Found:
			// RocketMQ's correctDeliverTimestamp: a time further away than
			// the level's delay is wrong (clock change); deliver now.
			if h.deliverAt > now+s.cfg.Levels[level-1].Milliseconds() {
				h.deliverAt = now
			}
			return h, true
		case engine.OffsetTooSmall, engine.OffsetOverflowBadly, engine.MessageWasRemoving, engine.OffsetFoundNull:
			if next == off {
				return head{}, false
			}
			s.setOffset(level, next)
			off = next
		default:
			return head{}, false
		}
	}
	return head{}, false
}

func (s *Service) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.offsets[level]
}

func (s *Service) setOffset(level int, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.offsets[level] != off {
		s.mu.offsets[level] = off
		s.mu.version++
	}
}

// deliver puts the message at h to its real topic and advances the level's
// offset only after the put returned (RocketMQ's messageTimeup + put).
func (s *Service) deliver(ctx context.Context, h head) error {
	res, err := s.store.GetMessage(record.ScheduleTopic, int32(h.level-1), h.offset, 1, nil)
	if err != nil {
		return err
	}
	if res.Status != engine.Found {
		res.Release()
		return nil // gone since peek; the next peek skips it
	}
	ext, derr := record.Decode(res.Messages[0].Record, -1, false)
	res.Release()
	if derr != nil {
		s.cfg.Logger.Error("delayed message unreadable; skipped", "level", h.level, "offset", h.offset, "err", derr)
		s.setOffset(h.level, h.offset+1)
		return nil
	}
	m, reason := timeUp(ext)
	if m != nil {
		if s.cfg.Put != nil {
			_, err = s.cfg.Put(ctx, m)
		} else {
			_, err = s.store.Put(ctx, m)
		}
		if errors.Is(err, engine.ErrMessageIllegal) {
			reason, err = err.Error(), nil
		}
		if err != nil {
			return fmt.Errorf("put to %s/%d: %w", m.Topic, m.QueueID, err)
		}
	}
	if reason != "" {
		s.cfg.Logger.Error("delayed message dropped", "level", h.level, "offset", h.offset, "reason", reason)
	}
	s.setOffset(h.level, h.offset+1)
	return nil
}

// timeUp builds the message to deliver (RocketMQ's messageTimeup): the real
// topic and queue from REAL_TOPIC / REAL_QID (which stay in the
// properties), DELAY cleared, WAIT false, reconsumeTimes kept. A message
// that cannot be delivered gives nil and the reason.
func timeUp(ext *record.MessageExt) (*record.Message, string) {
	props := ext.Properties
	topic := props[record.PropertyRealTopic]
	qid, err := strconv.ParseInt(props[record.PropertyRealQueueID], 10, 32)
	switch {
	case topic == "":
		return nil, "no REAL_TOPIC"
	case err != nil || qid < 0:
		return nil, fmt.Sprintf("bad REAL_QID %q", props[record.PropertyRealQueueID])
	case topic == record.TransHalfTopic:
		return nil, "transaction half message"
	}
	m := ext.Message
	delete(props, record.PropertyDelayTimeLevel)
	props[record.PropertyWaitStoreMsgOK] = "false"
	m.Topic, m.QueueID, m.Properties = topic, int32(qid), props
	return &m, ""
}
