package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/clocks"
	ihooks "github.com/rocketstore/rocketstore/internal/hooks"
)

// Dispatcher receives each record in CommitLog order. It must be idempotent
// and must not keep req's slices after returning.
type Dispatcher interface {
	Dispatch(req *Request) error
}

// DispatcherFunc adapts a function to Dispatcher.
type DispatcherFunc func(req *Request) error

// Dispatch calls f(req).
func (f DispatcherFunc) Dispatch(req *Request) error { return f(req) }

// Releaser releases a view returned by Log.Data.
type Releaser interface{ Release() }

// Log is the CommitLog as the reput service reads it.
type Log interface {
	// Data returns the published bytes from offset to the end of the file
	// holding it, or nil when there are none; the caller releases r.
	Data(offset int64) (b []byte, r Releaser)
	// MinOffset and MaxOffset bound the published log.
	MinOffset() int64
	MaxOffset() int64
	// RollNextFile returns the start of the file after the one holding
	// offset.
	RollNextFile(offset int64) int64
}

// ErrStopped reports a wait on a service that was closed.
var ErrStopped = errors.New("dispatch: service stopped")

// DefaultRetryInterval is how long the service waits before it retries a
// failed pass (RocketMQ's putMessagePositionInfoWrapper sleeps 1 s between
// its retries).
const DefaultRetryInterval = time.Second

// Hooks tell the owner of a Service about failures, so that it can refuse
// new messages while they cannot be made consumable (RocketMQ's
// LOGICS_QUEUE_ERROR running flag) and accept them again once a retry
// succeeds. Both are called from the dispatching goroutine.
type Hooks struct {
	// Failed is called after every failed pass, with its error.
	Failed func(err error)
	// Resumed is called after the first successful pass that follows a
	// failure.
	Resumed func()
}

// Service is the reput service: it dispatches every record from
// reputFromOffset to the end of the log. One goroutine (started by Start)
// or the caller of DoReput does the work; never both at once.
type Service struct {
	log         Log
	parser      *Parser
	dispatchers []Dispatcher

	reputFrom atomic.Int64
	halted    atomic.Bool // Halt: stop without the final pass
	// parked is set by the service's goroutine before it waits for a
	// wake, and cleared by the Wake that sends one: a Wake that finds
	// it clear costs one atomic load (a put calls Wake every time).
	parked  atomic.Bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	running sync.Mutex // held while a pass runs

	// req is the request handed to the dispatchers. It lives in the
	// Service, not on the stack of dispatchFile: a pointer passed to an
	// interface method escapes, so a local would cost one allocation per
	// record. Only the goroutine holding running touches it.
	req Request

	mu       sync.Mutex
	progress chan struct{} // closed and replaced when reputFrom moves
	// waiters counts WaitFor calls blocked on progress. notify replaces
	// the channel only when someone waits, so that a pass with no waiter
	// allocates nothing (dispatch runs after every put).
	waiters int
	err     error // the failure of the last pass, nil once a pass succeeds

	hooks Hooks
	// RetryInterval is the wait between a failed pass and its retry
	// (DefaultRetryInterval when zero). Set it before Start.
	RetryInterval time.Duration
	// Clock times the wait between a failed pass and its retry; nil
	// means the wall clock. Set it before Start (a store hands in its
	// Config.Clock).
	Clock clockwork.Clock
	// switches are the test switches (internal/hooks): IgnoreErrors makes
	// a failed record count as dispatched, the broken variant of the
	// crash tests that shows they catch a lost unit.
	switches ihooks.Dispatch

	// The broken variant of the wake protocol and its test seam (the
	// tests of this package set them): noRecheck parks without looking
	// at the log again after announcing it, and beforePark runs between
	// a pass and that announcement.
	noRecheck  bool
	beforePark func()

	// skips maps the start of each damaged CommitLog range that recovery
	// found (and left in place, see engine's recovery) to its end; a pass
	// jumps over it instead of parsing it. Written before Start only.
	skips map[int64]int64
}

// SetHooks installs h; call it before Start.
func (s *Service) SetHooks(h Hooks) { s.hooks = h }

// Skip makes every later pass jump from CommitLog offset from to to
// without dispatching anything in between: recovery found a damaged record
// there and kept the data after it. Call it before Start.
func (s *Service) Skip(from, to int64) {
	s.running.Lock()
	defer s.running.Unlock()
	if s.skips == nil {
		s.skips = make(map[int64]int64)
	}
	s.skips[from] = to
}

// NewService returns a service that will dispatch from reputFrom.
func NewService(log Log, parser *Parser, reputFrom int64, dispatchers ...Dispatcher) *Service {
	s := &Service{log: log, parser: parser, dispatchers: dispatchers,
		wake: make(chan struct{}, 1), progress: make(chan struct{})}
	s.reputFrom.Store(reputFrom)
	return s
}

// ReputFromOffset returns the CommitLog offset of the next record to
// dispatch.
func (s *Service) ReputFromOffset() int64 { return s.reputFrom.Load() }

// SetReputFrom moves the next offset to dispatch (recovery uses it before
// Start, to replay from a chosen offset). A failure stays reported until
// a pass succeeds.
func (s *Service) SetReputFrom(offset int64) {
	s.running.Lock()
	defer s.running.Unlock()
	s.reputFrom.Store(offset)
}

// Apply runs every dispatcher on req, outside any pass (before the service
// starts, say), as a pass would.
func (s *Service) Apply(req *Request) error {
	s.running.Lock()
	defer s.running.Unlock()
	for _, d := range s.dispatchers {
		if err := d.Dispatch(req); err != nil {
			return fmt.Errorf("dispatch at commitlog offset %d: %w", req.CommitLogOffset, err)
		}
	}
	return nil
}

// Exclusive runs fn while no dispatch pass is in flight, so that fn may
// remove what dispatchers write to (the engine deletes a topic's queues
// this way).
func (s *Service) Exclusive(fn func() error) error {
	s.running.Lock()
	defer s.running.Unlock()
	return fn()
}

// BehindBytes returns how many published bytes are not dispatched yet.
func (s *Service) BehindBytes() int64 { return max(0, s.log.MaxOffset()-s.reputFrom.Load()) }

// Err returns the dispatch failure that stopped the service, if any.
func (s *Service) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Wake tells the service that the log grew. It never blocks. It does
// nothing while the service's goroutine is running a pass: that goroutine
// looks at the log's end again after announcing that it parks, so a
// record published before the announcement is dispatched without a wake,
// and one published after it finds the announcement (parkOrRun).
func (s *Service) Wake() {
	if s.parked.Load() && s.parked.CompareAndSwap(true, false) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Start runs the service in its own goroutine until Close.
func (s *Service) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
}

func (s *Service) loop() {
	defer close(s.done)
	retry := s.RetryInterval
	if retry <= 0 {
		retry = DefaultRetryInterval
	}
	clock := clocks.Or(s.Clock)
	for {
		seen := s.log.MaxOffset()
		if _, err := s.DoReput(); err != nil {
			// Retry later rather than stop: the cause (a full disk,
			// typically) may go away, and the owner refuses new
			// messages meanwhile. Wakes are ignored until then, so a
			// failing pass does not run once per put.
			t := clock.NewTimer(retry)
			select {
			case <-t.Chan():
				continue
			case <-s.stop:
				t.Stop()
				return
			}
		}
		if !s.parkOrRun(seen) {
			// Drain what was published before Close (not on Halt: a
			// halted store must not write anything more).
			if !s.halted.Load() {
				_, _ = s.DoReput() // a failure is kept by fail, and Close returns it
			}
			return
		}
	}
}

// parkOrRun waits for a Wake after a pass that started when the log ended
// at seen, and returns false on stop. It announces the wait (parked)
// before it looks at the log's end again: a put publishes before it calls
// Wake, so either the put finds the announcement and sends a wake, or
// this look finds the put's record and the loop runs another pass at
// once. Without that second look, a record published between the end of
// the pass and the announcement would wait for the next put's wake
// (TestWakeDuringPassEnd).
func (s *Service) parkOrRun(seen int64) bool {
	if s.beforePark != nil {
		s.beforePark()
	}
	s.parked.Store(true)
	if !s.noRecheck && s.log.MaxOffset() != seen {
		s.parked.Store(false)
		return true
	}
	select {
	case <-s.wake:
		s.parked.Store(false)
		return true
	case <-s.stop:
		return false
	}
}

// Close stops the goroutine started by Start after a final pass, and
// releases every waiter.
func (s *Service) Close() error {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = ErrStopped
	}
	close(s.progress)
	s.progress = make(chan struct{})
	s.waiters = 0
	err := s.err
	s.mu.Unlock()
	if errors.Is(err, ErrStopped) {
		return nil
	}
	return err
}

// Halt is Close without the final pass: the goroutine stops as soon as it
// is between passes. Used to model a killed process.
func (s *Service) Halt() error {
	s.halted.Store(true)
	return s.Close()
}

// DoReput dispatches every record published after reputFromOffset and
// returns how many it dispatched.
func (s *Service) DoReput() (int, error) {
	s.running.Lock()
	defer s.running.Unlock()
	if err := s.Err(); errors.Is(err, ErrStopped) {
		return 0, err
	}
	if min := s.log.MinOffset(); s.reputFrom.Load() < min {
		s.reputFrom.Store(min)
	}
	n := 0
	for s.reputFrom.Load() < s.log.MaxOffset() {
		k, err := s.dispatchFile()
		n += k
		if err != nil {
			s.fail(err)
			return n, err
		}
		if k == 0 && !s.moved() {
			break
		}
	}
	s.succeeded()
	return n, nil
}

// succeeded clears a failure after a pass that completed, telling the
// owner, and wakes waiters.
func (s *Service) succeeded() {
	s.mu.Lock()
	failed := s.err != nil && !errors.Is(s.err, ErrStopped)
	if failed {
		s.err = nil
	}
	s.mu.Unlock()
	if failed && s.hooks.Resumed != nil {
		s.hooks.Resumed()
	}
	s.notify()
}

// dispatchFile dispatches the records of the file holding reputFrom.
func (s *Service) dispatchFile() (int, error) {
	from := s.reputFrom.Load()
	b, r := s.log.Data(from)
	if b == nil {
		return 0, nil
	}
	defer r.Release()
	n := 0
	for pos := 0; pos < len(b); {
		if len(s.skips) > 0 {
			if to, ok := s.skips[from+int64(pos)]; ok {
				if to-from > int64(len(b)) {
					// The damage reaches into a later file.
					s.reputFrom.Store(to)
					return n, nil
				}
				pos = int(to - from)
				s.reputFrom.Store(to)
				continue
			}
		}
		req, size, blank, err := s.parser.Parse(b[pos:], from+int64(pos), false)
		s.req = req
		switch {
		case err != nil:
			s.reputFrom.Store(from + int64(pos))
			return n, fmt.Errorf("dispatch at commitlog offset %d: %w", from+int64(pos), err)
		case blank:
			s.reputFrom.Store(s.log.RollNextFile(from + int64(pos)))
			return n, nil
		}
		for _, d := range s.dispatchers {
			if err := d.Dispatch(&s.req); err != nil && !s.switches.IgnoreErrors {
				s.reputFrom.Store(from + int64(pos))
				return n, fmt.Errorf("dispatch at commitlog offset %d: %w", from+int64(pos), err)
			}
		}
		pos += int(size)
		n++
		s.reputFrom.Store(from + int64(pos))
	}
	return n, nil
}

// moved reports whether the last pass crossed a blank record.
func (s *Service) moved() bool {
	b, r := s.log.Data(s.reputFrom.Load())
	if r != nil {
		r.Release()
	}
	return b != nil
}

// fail records the failure of a pass (the latest one: a retry may fail
// differently) and tells the owner.
func (s *Service) fail(err error) {
	s.mu.Lock()
	stopped := errors.Is(s.err, ErrStopped)
	if !stopped {
		s.err = err
	}
	s.mu.Unlock()
	if !stopped && s.hooks.Failed != nil {
		s.hooks.Failed(err)
	}
	s.notify()
}

// notify wakes WaitFor callers, if there are any.
func (s *Service) notify() {
	s.mu.Lock()
	if s.waiters > 0 {
		close(s.progress)
		s.progress = make(chan struct{})
		s.waiters = 0
	}
	s.mu.Unlock()
}

// WaitFor blocks until every record below offset is dispatched, the
// service fails or stops, or ctx is done.
func (s *Service) WaitFor(ctx context.Context, offset int64) error {
	for {
		// Register as a waiter before checking reputFrom: a pass that
		// moves reputFrom after the check then sees the waiter and closes
		// this channel, so no wake-up is lost.
		s.mu.Lock()
		ch, err := s.progress, s.err
		s.waiters++
		s.mu.Unlock()
		if s.reputFrom.Load() >= offset {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
