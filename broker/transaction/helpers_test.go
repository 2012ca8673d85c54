package transaction

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"sync"
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
	if raceEnabled && !flagSet("rapid.checks") {
		// 100 cases take about a minute under the race detector; CI runs
		// the full 100 without it.
		_ = flag.Set("rapid.checks", "15")
	}
	goleak.VerifyTestMain(m)
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a Manual store on memfs with the service and a fake clock.
type env struct {
	t  tb
	fs *crashsim.FS
	// chooser decides what unsynced state a power cut keeps (rapid draws
	// it in the property test; unit tests lose everything unsynced).
	chooser crashsim.Chooser
	clock   *clockwork.FakeClock
	store   *engine.Store
	svc     *Service
	cfg     Config
	chk     *recorder
}

// tb is what env needs of testing.TB and rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// recorder is a Checker that records the check-backs.
type recorder struct {
	mu     sync.Mutex
	checks []*engine.MessageExt
	recs   [][]byte
}

func (r *recorder) CheckTransactionState(group string, half *engine.MessageExt, rec []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, half)
	r.recs = append(r.recs, rec)
	return nil
}

func (r *recorder) take() []*engine.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.checks
	r.checks, r.recs = nil, nil
	return out
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}, chk: &recorder{}}
	e.clock = clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	e.cfg = Config{Clock: e.clock, Logger: quiet, hooks: hooks.Service{Manual: true}}
	e.open()
	t.Cleanup(func() { e.close() })
	return e
}

func (e *env) storeConfig() engine.Config {
	return hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 256, Logger: quiet,
		FlushDiskType: engine.SyncFlush, Clock: e.clock})
}

func (e *env) open() {
	e.t.Helper()
	s, err := engine.Open(e.fs, e.storeConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		e.t.Fatal(err)
	}
	svc, err := Open(context.Background(), s, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	svc.SetChecker(e.chk)
	e.store, e.svc = s, svc
}

func (e *env) close() {
	if e.store != nil {
		e.svc.Close()
		_ = e.store.Close()
		e.store = nil
	}
}

// powerCut abandons the store (nothing more is synced) and reopens it
// on a crash image of the disk.
func (e *env) powerCut() {
	e.svc.Close()
	engineops.Of(e.store).Abandon()
	e.store = nil
	e.reboot()
}

// reboot replaces the disk by its crash image and opens the store on it.
func (e *env) reboot() {
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

// prepare sends a half message for topic T queue q with key k.
func (e *env) prepare(k string) (engine.PutResult, *engine.MessageExt) {
	e.t.Helper()
	m := &record.Message{Topic: "T", QueueID: 1, Body: []byte("body-" + k), BornTimestamp: e.ms(),
		Properties: map[string]string{record.PropertyTransactionPrep: "true", PropProducerGroup: "PG",
			record.PropertyUniqClientMsgID: k, "key": k}}
	res, err := e.svc.Prepare(context.Background(), m)
	if err != nil {
		e.t.Fatal(err)
	}
	half, err := e.store.LookMessageByOffset(res.WroteOffset)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, half
}

func endReq(half *engine.MessageExt, how int32) EndRequest {
	return EndRequest{ProducerGroup: "PG", TranStateTableOffset: half.QueueOffset, CommitLogOffset: half.CommitLogOffset,
		CommitOrRollback: how}
}

func (e *env) end(half *engine.MessageExt, how int32) EndResult {
	return e.svc.End(context.Background(), endReq(half, how))
}

// delivered returns the keys in T/1, in order.
func (e *env) delivered() []string {
	e.t.Helper()
	if _, err := engineops.Of(e.store).Dispatch(); err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for off := int64(0); off < e.store.MaxOffsetInQueue("T", 1); off++ {
		res, err := e.store.GetMessage("T", 1, off, 1, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, v := range res.Messages {
			m, err := record.Decode(v.Record, v.CommitLogOffset, true)
			if err != nil {
				e.t.Fatal(err)
			}
			if record.TransactionType(m.SysFlag) != record.TransactionCommit {
				e.t.Fatalf("delivered message without the commit sysflag: %+v", m)
			}
			keys = append(keys, m.Properties["key"])
		}
		res.Release()
	}
	return keys
}

func (e *env) advance(d time.Duration) { e.clock.Advance(d.Truncate(time.Millisecond)) }

func itoa(i int) string { return strconv.Itoa(i) }

// ms is the clock's time in milliseconds.
func (e *env) ms() int64 { return e.clock.Now().UnixMilli() }
