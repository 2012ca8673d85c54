package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// Service is the reput service: it dispatches every record from
// reputFromOffset to the end of the log. One goroutine (started by Start)
// or the caller of DoReput does the work; never both at once.
type Service struct {
	log         Log
	parser      *Parser
	dispatchers []Dispatcher

	reputFrom atomic.Int64
	halted    atomic.Bool // Halt: stop without the final pass
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	running   sync.Mutex // held while a pass runs

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
	err     error // first dispatch failure; the service stops
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

// SetReputFrom moves the next offset to dispatch and clears a failure
// (recovery uses it before Start, to replay from a chosen offset).
func (s *Service) SetReputFrom(offset int64) {
	s.running.Lock()
	defer s.running.Unlock()
	s.reputFrom.Store(offset)
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
}

// Apply runs every dispatcher on req, outside any pass: abnormal recovery
// dispatches each record as its scan validates it (one pass over the log,
// as RocketMQ's recoverAbnormally does), before the service starts.
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

// Wake tells the service that the log grew. It never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the service in its own goroutine until Close.
func (s *Service) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
}

func (s *Service) loop() {
	defer close(s.done)
	for {
		if _, err := s.DoReput(); err != nil {
			return
		}
		select {
		case <-s.wake:
		case <-s.stop:
			// Drain what was published before Close (not on Halt: a
			// halted store must not write anything more).
			if !s.halted.Load() {
				s.DoReput()
			}
			return
		}
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
	if err := s.Err(); err != nil && !errors.Is(err, ErrStopped) {
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
	s.notify()
	return n, nil
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
			if err := d.Dispatch(&s.req); err != nil {
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

func (s *Service) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
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
