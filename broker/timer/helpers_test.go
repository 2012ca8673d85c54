package timer

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

func TestMain(m *testing.M) {
	flag.Parse()
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	testTopic  = "T"
	startClock = 1_700_000_000_000
)

// tb is what env needs of testing.TB and rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// env is a Manual SYNC_FLUSH store on crashsim with the timer service
// and a fake clock.
type env struct {
	t       tb
	fs      *crashsim.FS
	chooser crashsim.Chooser
	clock   *clockwork.FakeClock
	store   *engine.Store
	svc     *Service
	cfg     Config
	// cutAfterPut, when set, is called after each delivery put and may
	// fail it (a process that dies after the write).
	cutAfterPut func() error
}

func newEnv(t testing.TB, broken hooks.Timer) *env {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(broken, 1000, time.Hour)
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) init(broken hooks.Timer, precision int64, maxDelay time.Duration) {
	e.clock = clockwork.NewFakeClockAt(time.UnixMilli(startClock))
	e.cfg = Config{PrecisionMs: precision, MaxDelay: maxDelay, LogFileSize: 52 * 8, Logger: quiet, Clock: e.clock, broken: broken}
	e.cfg.svc.Manual = true
}

func (e *env) open() {
	e.t.Helper()
	// Deliveries are put with WAIT false: a power cut may tear one and
	// keep an unsynced record after it. Truncating there drops only
	// records no sync covered (a sync covers everything before its end),
	// none an acknowledged send wrote.
	s, err := engine.Open(e.fs, hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 256,
		Logger: quiet, FlushDiskType: engine.SyncFlush, Clock: e.clock, OnUndecidableDamage: engine.DamageTruncate}))
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Put = func(ctx context.Context, m *record.Message) (engine.PutResult, error) {
		res, err := s.Put(ctx, m)
		if err == nil && e.cutAfterPut != nil {
			err = e.cutAfterPut()
		}
		return res, err
	}
	svc, err := New(e.fs, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store = s
	if err := svc.Start(s); err != nil {
		_ = s.Close()
		e.store = nil
		e.t.Fatal(err)
	}
	e.svc = svc
}

func (e *env) close() {
	if e.store != nil {
		_ = e.svc.Close()
		_ = e.store.Close()
		e.store = nil
	}
}

// powerCut stops everything with nothing more synced and reopens on a
// crash image of the disk.
func (e *env) powerCut() {
	e.svc.Abandon()
	engineops.Of(e.store).Abandon()
	e.store = nil
	e.fs = newCrashFS(e.t, e.fs.Crash(e.chooser))
	e.open()
}

func newCrashFS(t tb, img afero.Fs) *crashsim.FS {
	fs, err := crashsim.New(img, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// loseAll is the chooser of the unit tests: nothing unsynced survives.
type loseAll struct{}

func (loseAll) Choose(int, string) int { return 0 }

// send stores message key k for delivery at deliverMs through Transform
// and dispatches it; it returns what was stored.
func (e *env) send(k string, props map[string]string) (engine.PutResult, error) {
	e.t.Helper()
	p := map[string]string{"key": k, record.PropertyUniqClientMsgID: "U" + k}
	for kk, v := range props {
		p[kk] = v
	}
	m, err := e.svc.Config().Transform(&record.Message{Topic: testTopic, QueueID: 1, Body: []byte("body-" + k),
		BornTimestamp: e.ms(), Properties: p}, e.ms())
	if err != nil {
		return engine.PutResult{}, err
	}
	res, err := e.store.Put(context.Background(), m)
	if err != nil {
		e.t.Fatal(err)
	}
	e.dispatch()
	return res, nil
}

func (e *env) sendAt(k string, deliverMs int64) engine.PutResult {
	e.t.Helper()
	res, err := e.send(k, map[string]string{record.PropertyTimerDeliverMS: strconv.FormatInt(deliverMs, 10)})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) dispatch() {
	e.t.Helper()
	if _, err := engineops.Of(e.store).Dispatch(); err != nil {
		e.t.Fatal(err)
	}
}

// advance dispatches and runs one service step.
func (e *env) advance() time.Duration {
	e.t.Helper()
	e.dispatch()
	wait, err := e.svc.Advance(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	e.flush()
	return wait
}

// flush syncs the CommitLog (the flush service's work: a delivery is
// put with WAIT false) and dispatches it.
func (e *env) flush() {
	e.t.Helper()
	if err := e.store.FlushCommitLog(0); err != nil {
		e.t.Fatal(err)
	}
	e.dispatch()
}

func (e *env) step(d time.Duration) { e.clock.Advance(d.Truncate(time.Millisecond)) }

// ms is the clock's time in milliseconds.
func (e *env) ms() int64 { return e.clock.Now().UnixMilli() }

// deliveredMsg is a message found in the real topic.
type deliveredMsg struct {
	key     string
	storeMs int64
	props   map[string]string
}

// delivered returns the messages in the test topic's queue 1.
func (e *env) delivered() []deliveredMsg {
	e.t.Helper()
	var out []deliveredMsg
	for off := e.store.MinOffsetInQueue(testTopic, 1); off < e.store.MaxOffsetInQueue(testTopic, 1); off++ {
		phy, err := e.store.CommitLogOffsetInQueue(testTopic, 1, off)
		if err != nil {
			e.t.Fatal(err)
		}
		m, err := e.store.LookMessageByOffset(phy)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, deliveredMsg{key: m.Properties["key"], storeMs: m.StoreTimestamp, props: m.Properties})
	}
	return out
}
