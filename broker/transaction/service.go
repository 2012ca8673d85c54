package transaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// Properties of transactional messages (MessageConst); the topics are
// record.TransHalfTopic, TransOpHalfTopic and TransCheckMaxTimeTopic.
const (
	PropProducerGroup           = "PGROUP"
	PropCheckTimes              = "TRANSACTION_CHECK_TIMES"
	PropCheckImmunitySecs       = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropPreparedQueueOff        = "TRAN_PREPARED_QUEUE_OFFSET"
	PropOutcome                 = "TRAN_OUTCOME"
	removeTag                   = "d"
	opQueueID             int32 = 0
	halfQueueID           int32 = 0
)

// Outcome is how a transaction ended.
type Outcome string

// Outcomes, as written in op records.
const (
	Committed  Outcome = "commit"
	RolledBack Outcome = "rollback"
	Discarded  Outcome = "discard"
)

// EndTransaction's commitOrRollback values (MessageSysFlag).
const (
	TypeNot      int32 = 0x0
	TypeCommit   int32 = 0x8
	TypeRollback int32 = 0xC
)

// Response codes the service answers with (ResponseCode).
const (
	CodeSuccess        = 0
	CodeSystemError    = 1
	CodeMessageIllegal = 13
	CodeServiceNA      = 14
)

// Config configures a Service. Zero values mean RocketMQ's defaults.
type Config struct {
	// TimeOut is transactionTimeOut (6 s).
	TimeOut time.Duration
	// CheckMax is transactionCheckMax (15).
	CheckMax int
	// CheckInterval is transactionCheckInterval (60 s).
	CheckInterval time.Duration
	// Clock is the service's clock; nil means the wall clock. Check-back
	// timing follows it and it runs the check loop's ticker; a broker
	// hands in its store's clock.
	Clock clockwork.Clock
	// Logger receives the service's logs (slog.Default()).
	Logger *slog.Logger
	// Put writes the service's messages (half, op, commit, check-back
	// copies); nil means the store's Put. A replicated broker group
	// passes its Writer, so that they go through the group's log.
	Put func(ctx context.Context, m *record.Message) (engine.PutResult, error)
	// Active reports whether this broker may write and check back now
	// (nil: always). A replica that does not lead is not: it runs no
	// check-back, and its state is rebuilt from the queues when it is
	// active again (see Invalidate).
	Active func() bool

	// hooks are the test switches (internal/hooks.Service; Manual: no
	// background check loop, the owner calls Check).
	hooks hooks.Service
}

func init() { hooks.RegisterService(func(c *Config) *hooks.Service { return &c.hooks }) }

func (c Config) withDefaults() Config {
	if c.TimeOut == 0 {
		c.TimeOut = 6 * time.Second
	}
	if c.CheckMax == 0 {
		c.CheckMax = 15
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 60 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Active == nil {
		c.Active = func() bool { return true }
	}
	return c
}

// Checker sends CHECK_TRANSACTION_STATE for a half message to a producer
// of its group. record is the half message in the CommitLog record layout
// (the request body RocketMQ sends). An error (no producer online, a
// failed write) is logged; the check still counts.
type Checker interface {
	CheckTransactionState(group string, half *engine.MessageExt, record []byte) error
}

// CheckerFunc adapts a function to Checker.
type CheckerFunc func(group string, half *engine.MessageExt, record []byte) error

// CheckTransactionState calls f.
func (f CheckerFunc) CheckTransactionState(group string, half *engine.MessageExt, rec []byte) error {
	return f(group, half, rec)
}

// tx is one open transaction: its half messages (the first and the
// latest copy) and check state.
type tx struct {
	root       int64 // queue offset of the first half message
	rootCLO    int64 // its CommitLog offset
	latest     int64 // queue offset of the latest copy
	latestCLO  int64 // its CommitLog offset
	born       int64 // producer's born timestamp (ms)
	checkTimes int
	immunity   time.Duration
}

// Service is the transactional-message service over one store.
type Service struct {
	store *engine.Store
	cfg   Config

	mu       sync.Mutex        // serializes the writes of End and Check, guards the maps
	open     map[int64]*tx     // root → open transaction
	rootOf   map[int64]int64   // half queue offset → root
	rootByCL map[int64]int64   // half CommitLog offset → root
	ended    map[int64]Outcome // root → outcome

	checkerMu sync.Mutex
	checker   Checker

	stop chan struct{}
	done chan struct{}
	once sync.Once

	// afterFinalPut, when set (tests only), runs between a commit's real
	// message and its op record: where a crash used to duplicate.
	afterFinalPut func()
	// skipRepair, when set (tests only: the broken variant), turns the
	// lost-op repair at open off.
	skipRepair bool
	// stale is set while the maps may miss what other replicas wrote
	// (replicated.go); guarded by mu.
	stale bool
}

// brokenSkipRepair is set by the broken-variant test only.
var brokenSkipRepair bool

// Open rebuilds the service's state from the store (whose ConsumeQueues
// must be dispatched up to the CommitLog's end) and starts the check loop
// unless the config is manual (internal/hooks.Service).
func Open(ctx context.Context, store *engine.Store, cfg Config) (*Service, error) {
	s := &Service{store: store, cfg: cfg.withDefaults(), skipRepair: brokenSkipRepair, open: map[int64]*tx{}, rootOf: map[int64]int64{},
		rootByCL: map[int64]int64{}, ended: map[int64]Outcome{}, stop: make(chan struct{}), done: make(chan struct{})}
	if !s.cfg.Active() {
		s.stale = true // rebuilt once active (replicated.go)
	} else if err := s.rebuild(ctx); err != nil {
		return nil, err
	}
	if s.cfg.hooks.Manual {
		close(s.done)
	} else {
		go s.loop()
	}
	return s, nil
}

// SetChecker installs the check-back sender (the server's).
func (s *Service) SetChecker(c Checker) {
	s.checkerMu.Lock()
	s.checker = c
	s.checkerMu.Unlock()
}

// Close stops the check loop.
func (s *Service) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *Service) loop() {
	defer close(s.done)
	t := s.cfg.Clock.NewTicker(s.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.Chan():
			if _, err := s.Check(context.Background()); err != nil && !errors.Is(err, engine.ErrClosed) {
				s.cfg.Logger.Error("transaction check", "err", err)
			}
		}
	}
}

// Pending returns the number of open transactions.
func (s *Service) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Prepare stores a half message (TransactionalMessageBridge.putHalfMessage):
// the real topic and queue go to properties, the message to the half
// queue with its transaction bits cleared.
func (s *Service) Prepare(ctx context.Context, m *record.Message) (engine.PutResult, error) {
	props := make(map[string]string, len(m.Properties)+2)
	for k, v := range m.Properties {
		props[k] = v
	}
	props[record.PropertyRealTopic] = m.Topic
	props[record.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	delete(props, record.PropertyDelayTimeLevel) // 4.x has no delayed transactional messages
	half := *m
	half.Topic, half.QueueID, half.Properties = record.TransHalfTopic, halfQueueID, props
	half.SysFlag = m.SysFlag &^ record.TransactionRollback // TRANSACTION_NOT_TYPE
	res, err := s.put(ctx, &half)
	if err != nil && !errors.Is(err, engine.ErrFlushTimeout) {
		return res, err
	}
	s.mu.Lock()
	if !s.stale {
		s.addHalf(res.QueueOffset, res.WroteOffset, &half)
	}
	s.mu.Unlock()
	return res, err
}

// addHalf records a half message (first or rewritten copy).
func (s *Service) addHalf(qo, clo int64, m *record.Message) {
	root := qo
	if v, ok := m.Properties[PropPreparedQueueOff]; ok {
		if r, err := strconv.ParseInt(v, 10, 64); err == nil {
			root = r
		}
	}
	s.rootOf[qo], s.rootByCL[clo] = root, root
	if _, done := s.ended[root]; done {
		return
	}
	t := s.open[root]
	if t == nil {
		t = &tx{root: root, rootCLO: clo, latest: -1}
		s.open[root] = t
	}
	if qo > t.latest {
		t.latest, t.latestCLO = qo, clo
		t.born = m.BornTimestamp
		t.checkTimes, _ = strconv.Atoi(m.Properties[PropCheckTimes])
		t.immunity = s.cfg.TimeOut
		if v, err := strconv.ParseInt(m.Properties[PropCheckImmunitySecs], 10, 64); err == nil && v > 0 {
			t.immunity = time.Duration(v) * time.Second
		}
	}
	if root == qo {
		t.rootCLO = clo
	}
}

// end marks a transaction ended.
func (s *Service) end(root int64, o Outcome) {
	s.ended[root] = o
	delete(s.open, root)
}

// putOp writes the op record of a half message.
func (s *Service) putOp(ctx context.Context, halfQO int64, o Outcome) error {
	_, err := s.put(ctx, &record.Message{Topic: record.TransOpHalfTopic, QueueID: opQueueID,
		Body: []byte(strconv.FormatInt(halfQO, 10)), BornTimestamp: clocks.Millis(s.cfg.Clock)(),
		Properties: map[string]string{record.PropertyTags: removeTag, PropOutcome: string(o)}})
	if errors.Is(err, engine.ErrFlushTimeout) {
		err = nil
	}
	return err
}

// sortedOpen returns the open transactions in half-queue order.
func (s *Service) sortedOpen() []*tx {
	out := make([]*tx, 0, len(s.open))
	for _, t := range s.open {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].latest < out[j].latest })
	return out
}

// String summarizes the service for logs.
func (s *Service) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("transactions: %d open, %d ended", len(s.open), len(s.ended))
}
