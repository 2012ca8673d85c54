package pop

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
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
	testGroup  = "G"
	testRevive = record.ReviveTopicPrefix + "C"
	startClock = 1_700_000_000_000
)

// tb is what env needs of testing.TB and rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// env is a Manual SYNC_FLUSH store on crashsim with the service and a
// fake clock.
type env struct {
	t       tb
	fs      *crashsim.FS
	chooser crashsim.Chooser
	clock   *clockwork.FakeClock
	store   *engine.Store
	svc     *Service
	cfg     Config
	// cutAfterPut, when set, is called after each revive-log put and may
	// fail the put (a process that dies after the write).
	cutAfterPut func() error
	arrivals    *Arrivals
}

func newEnv(t testing.TB, broken hooks.Pop) *env {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(broken, DefaultMaxDeliveryAttempts)
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) init(broken hooks.Pop, maxAttempts int) {
	e.clock = clockwork.NewFakeClockAt(time.UnixMilli(startClock))
	e.cfg = Config{BrokerName: "b", ReviveTopic: testRevive, Logger: quiet, broken: broken,
		Clock: e.clock, MaxDeliveryAttempts: func(string) int { return maxAttempts }}
	e.cfg.svc.Manual = true
}

func (e *env) open() {
	e.t.Helper()
	e.arrivals = NewArrivals()
	s, err := engine.Open(e.fs, hooks.Manual(engine.Config{CommitLogFileSize: 256 << 10, ConsumeQueueUnits: 256,
		Logger: quiet, FlushDiskType: engine.SyncFlush, Clock: e.clock}), e.arrivals)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Arrivals = e.arrivals
	cfg.FS = e.fs
	cfg.Put = func(ctx context.Context, m *record.Message) (engine.PutResult, error) {
		res, err := s.Put(ctx, m)
		if err == nil && e.cutAfterPut != nil {
			err = e.cutAfterPut()
		}
		return res, err
	}
	svc, err := Open(context.Background(), s, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.svc = s, svc
}

func (e *env) close() {
	if e.store != nil {
		e.svc.Close()
		_ = e.store.Close()
		e.store = nil
	}
}

// powerCut stops the store with nothing more synced and reopens it on a
// crash image of the disk.
func (e *env) powerCut() {
	e.svc.Close()
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

// send stores a message with key k (and FIFO message group mg, if set)
// in queue qid of the test topic and dispatches it.
func (e *env) send(qid int32, k, mg string) {
	e.t.Helper()
	props := map[string]string{"key": k, record.PropertyKeys: k}
	if mg != "" {
		props[record.PropertyShardingKey] = mg
	}
	if _, err := e.store.Put(context.Background(), &record.Message{Topic: testTopic, QueueID: qid,
		Body: []byte("body-" + k), BornTimestamp: e.ms(), Properties: props}); err != nil {
		e.t.Fatal(err)
	}
	e.dispatch()
}

func (e *env) dispatch() {
	e.t.Helper()
	if _, err := engineops.Of(e.store).Dispatch(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) receive(qid int32, max int, invisible time.Duration, fifo bool) []Message {
	e.t.Helper()
	ms, err := e.svc.Receive(context.Background(), ReceiveRequest{Group: testGroup, Topic: testTopic, QueueID: qid,
		Max: max, InvisibleTime: invisible, FIFO: fifo})
	if err != nil {
		e.t.Fatal(err)
	}
	e.dispatch()
	return ms
}

func (e *env) ack(m Message) error {
	err := e.svc.Ack(context.Background(), testGroup, testTopic, m.Handle.String())
	e.dispatch()
	return err
}

func (e *env) advance(d time.Duration) { e.clock.Advance(d.Truncate(time.Millisecond)) }

// dlqKeys returns the keys in the group's DLQ.
func (e *env) dlqKeys() []string {
	e.t.Helper()
	e.dispatch()
	topic := "%DLQ%" + testGroup
	var keys []string
	for off := int64(0); off < e.store.MaxOffsetInQueue(topic, 0); off++ {
		m, err := e.svc.readAt(topic, 0, off)
		if err != nil {
			e.t.Fatal(err)
		}
		keys = append(keys, m.Properties["key"])
	}
	return keys
}

func keysOf(ms []Message) []string {
	ks := make([]string, len(ms))
	for i, m := range ms {
		ks[i] = m.Properties["key"]
	}
	return ks
}

// ms is the clock's time in milliseconds.
func (e *env) ms() int64 { return e.clock.Now().UnixMilli() }
