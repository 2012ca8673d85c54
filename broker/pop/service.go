package pop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Errors of the Service.
var (
	// ErrClosed: the service was closed.
	ErrClosed = errors.New("pop: service closed")
	// ErrStaleHandle: the handle's delivery is over (the message was
	// acked, moved to the DLQ, or delivered again since).
	ErrStaleHandle = errors.New("pop: receipt handle expired")
	// ErrBadRequest: a request argument is out of range.
	ErrBadRequest = errors.New("pop: bad request")
)

// reviveQueueID is the one queue of the revive topic.
const reviveQueueID int32 = 0

// Service is pop consumption over one store: see the package doc.
type Service struct {
	cfg   Config
	store *engine.Store

	mu     sync.Mutex
	queues map[queueKey]*queueState

	// scratch pools the buffers of receives and acks (*scratch).
	scratch sync.Pool

	// written counts the records written; compacted is its value at the
	// last snapshot; compactMu orders snapshots.
	written   atomic.Int64
	compacted atomic.Int64
	compactMu sync.Mutex

	// unwritten holds the acks of the AckBeforeDurable broken variant.
	unwrittenMu sync.Mutex
	unwritten   []*logRecord

	// reviveErrors counts failed background revive passes; lastLogged
	// rate-limits their logs.
	reviveErrors atomic.Int64
	lastLogged   time.Time

	closed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
}

// Open rebuilds the in-flight state from the revive topic (the store's
// queues must be dispatched: in manual mode Open dispatches them) and
// starts the background revive pass.
func Open(ctx context.Context, s *engine.Store, cfg Config) (*Service, error) {
	if cfg.ReviveTopic == "" {
		return nil, fmt.Errorf("%w: Config.ReviveTopic is empty", ErrBadRequest)
	}
	cfg = cfg.withDefaults(s)
	svc := &Service{cfg: cfg, store: s, queues: make(map[queueKey]*queueState),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := svc.replayAll(ctx); err != nil {
		return nil, err
	}
	if cfg.svc.Manual {
		close(svc.done)
	} else {
		go svc.reviveLoop()
	}
	return svc, nil
}

// Reload rebuilds the in-flight state from the revive topic: a replica
// of a replicated broker group calls it when it starts leading, since
// the records it applied as a follower went to its store only.
func (s *Service) Reload(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.replayAll(ctx)
}

// replayAll waits for the store's dispatch and replaces the state by the
// replay of the revive queue.
func (s *Service) replayAll(ctx context.Context) error {
	if s.cfg.svc.Manual {
		if _, err := engineops.Of(s.store).Dispatch(); err != nil {
			return fmt.Errorf("pop: dispatch before replay: %w", err)
		}
	} else if err := s.store.WaitDispatched(ctx, s.store.CommitLog().MaxOffset()); err != nil {
		return fmt.Errorf("pop: wait for dispatch before replay: %w", err)
	}
	s.mu.Lock()
	s.queues = make(map[queueKey]*queueState)
	s.mu.Unlock()
	return s.replay()
}

// replay applies the records of the revive queue in order, from the
// latest complete snapshot.
func (s *Service) replay() error {
	topic := s.cfg.ReviveTopic
	maxOff := s.store.MaxOffsetInQueue(topic, reviveQueueID)
	from, err := s.replayStart()
	if err != nil {
		return err
	}
	n := 0
	for off := from; off < maxOff; {
		res, err := s.store.GetMessage(topic, reviveQueueID, off, 256, nil)
		if err != nil {
			return fmt.Errorf("pop: read %s at %d: %w", topic, off, err)
		}
		for _, v := range res.Messages {
			if err := s.replayOne(v); err != nil {
				s.cfg.Logger.Warn("pop: skip a revive-log record", "topic", topic, "offset", v.QueueOffset, "err", err)
				continue
			}
			n++
		}
		next := res.NextBeginOffset
		res.Release()
		if next <= off {
			break
		}
		off = next
	}
	if n > 0 {
		s.cfg.Logger.Info("pop: in-flight state replayed", "records", n, "queues", len(s.queues))
	}
	return nil
}

func (s *Service) replayOne(v engine.MessageView) error {
	m, err := record.Decode(v.Record, -1, false)
	if err != nil {
		return err
	}
	r, err := decodeRecord(m.Body)
	if err != nil {
		return err
	}
	if r.op == opSnapStart {
		return nil
	}
	if s.cfg.broken.ForgetDeadlines {
		for i := range r.items {
			r.items[i].deadline = 0
		}
	}
	q := s.queue(queueKey{r.group, r.topic, r.queueID})
	q.mu.Lock()
	q.apply(r, v.QueueOffset)
	q.mu.Unlock()
	return nil
}

// queue returns the state of k, created empty.
func (s *Service) queue(k queueKey) *queueState {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		q = newQueueState(k)
		s.queues[k] = q
	}
	return q
}

// write stores r in the revive topic and returns its revive-queue offset.
// The caller holds the queue's lock. Under SYNC_FLUSH the record is
// durable when write returns (the store's put waits for the flush).
func (s *Service) write(ctx context.Context, r *logRecord) (int64, error) {
	at, _, err := s.writeWith(ctx, r, nil)
	return at, err
}

// writeWith is write that encodes r's body into buf (reused: Config.Put
// copies the message before it returns) and returns the buffer for the
// next record.
func (s *Service) writeWith(ctx context.Context, r *logRecord, buf []byte) (int64, []byte, error) {
	body := r.appendTo(buf[:0])
	m := &record.Message{Topic: s.cfg.ReviveTopic, QueueID: reviveQueueID, Body: body,
		BornTimestamp: r.popTime, EncodedProperties: opProperties[r.op]}
	res, err := s.cfg.Put(ctx, m)
	if err != nil {
		return 0, body, fmt.Errorf("pop: write %s record for %s/%s/%d: %w", opTags[r.op], r.group, r.topic, r.queueID, err)
	}
	s.written.Add(1)
	return res.QueueOffset, body, nil
}

// scratch holds the buffers of one receive or ack, reused through
// Service.scratch: the batch's picks, the record's items and body, the
// handles' text, the parsed handles and their indexes.
type scratch struct {
	picks []pick
	items []logItem
	body  []byte
	text  []byte
	refs  []ackRef
	idx   []int
	// batch copies the messages a receive reads; msgs holds the copies
	// of one chunk.
	batch record.Batch
	msgs  []*record.MessageExt
}

// getScratch returns buffers for one receive or ack; putScratch gives
// them back.
func (s *Service) getScratch() *scratch {
	if sc, ok := s.scratch.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// putScratch gives sc back, without what its buffers point to (messages,
// message groups), so that the pool keeps nothing else alive. The users
// leave each slice as long as the part they filled (the rest was cleared
// before).
func (s *Service) putScratch(sc *scratch) {
	clear(sc.picks)
	clear(sc.items)
	clear(sc.msgs)
	sc.picks, sc.items, sc.msgs = sc.picks[:0], sc.items[:0], sc.msgs[:0]
	s.scratch.Put(sc)
}

// now is the clock in ms.
func (s *Service) now() int64 { return clocks.Millis(s.cfg.Clock)() }

// reviveLoop runs Revive every ReviveInterval.
func (s *Service) reviveLoop() {
	defer close(s.done)
	t := s.cfg.Clock.NewTicker(s.cfg.ReviveInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.Chan():
			if _, err := s.Revive(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
				s.reviveFailed(err)
			}
		}
	}
}

// Close stops the background revive pass. The state needs no saving:
// it is all in the revive topic.
func (s *Service) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	close(s.stop)
	<-s.done
}

// reviveLogInterval is the least time between two logs of failed revive
// passes.
const reviveLogInterval = time.Minute

// reviveFailed counts a failed background revive pass and logs it, at
// most once every reviveLogInterval by the service's clock (a DLQ that
// refuses writes fails every pass).
func (s *Service) reviveFailed(err error) {
	n := s.reviveErrors.Add(1)
	if now := s.cfg.Clock.Now(); now.Sub(s.lastLogged) >= reviveLogInterval {
		s.lastLogged = now
		s.cfg.Logger.Error("pop: revive pass failed", "err", err, "failedPasses", n)
	}
}

// ReviveErrors returns the number of background revive passes that
// failed.
func (s *Service) ReviveErrors() int64 { return s.reviveErrors.Load() }
