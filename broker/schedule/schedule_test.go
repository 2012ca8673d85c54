package schedule_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/broker/longpoll"
	"github.com/rocketstore/rocketstore/broker/schedule"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestParseLevels(t *testing.T) {
	def, err := schedule.ParseLevels(schedule.DefaultLevels)
	if err != nil || len(def) != 18 || def[0] != time.Second || def[4] != time.Minute || def[17] != 2*time.Hour {
		t.Fatalf("%v %v", def, err)
	}
	if got := engine.DefaultDelayLevels(); len(got) != len(def) {
		t.Fatal("engine and schedule defaults differ")
	} else {
		for i := range got {
			if got[i] != def[i] {
				t.Fatalf("level %d: engine %v, schedule %v", i+1, got[i], def[i])
			}
		}
	}
	got, err := schedule.ParseLevels(" 100ms  2s 3m\t4h 1d ")
	want := []time.Duration{100 * time.Millisecond, 2 * time.Second, 3 * time.Minute, 4 * time.Hour, 24 * time.Hour}
	if err != nil || len(got) != len(want) {
		t.Fatalf("%v %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
	for _, bad := range []string{"", "  ", "1", "1x", "0s", "-1s", "s", "1.5s", "ms"} {
		if _, err := schedule.ParseLevels(bad); !errors.Is(err, schedule.ErrBadLevels) {
			t.Errorf("ParseLevels(%q) = %v", bad, err)
		}
	}
}

// storeTickers is how many tickers a running AsyncFlush store keeps on
// its clock: the CommitLog and ConsumeQueue flush services and the clean
// service.
const storeTickers = 3

type env struct {
	afs   afero.Fs
	fs    *memfs.FS
	store *engine.Store
	svc   *schedule.Service
	hold  *longpoll.Hold
}

func engineConfig(levels []time.Duration, clk clockwork.Clock, manual bool) engine.Config {
	return hooks.WithManual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64, Logger: quiet,
		DelayLevels: levels, Clock: clk}, manual)
}

// start opens a store and its schedule service on one clock, clk.
func start(t *testing.T, afs afero.Fs, levels []time.Duration, clk clockwork.Clock, manual bool) *env {
	t.Helper()
	e := &env{afs: afs, fs: memfs.New(afs), hold: longpoll.New(true, nil)}
	e.svc = schedule.New(e.fs, hooks.ManualService(schedule.Config{Levels: levels, Logger: quiet, Clock: clk}, manual))
	s, err := engine.Open(e.fs, engineConfig(levels, clk, manual), e.hold, e.svc)
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
	if err := e.svc.Start(s); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) close(t *testing.T) {
	t.Helper()
	e.hold.Close()
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
}

// powerCut abandons everything: only what was synced survives.
func (e *env) powerCut() {
	e.hold.Close()
	e.svc.Abandon()
	engineops.Of(e.store).Abandon()
}

func (e *env) putDelayed(t *testing.T, level int, key string) engine.PutResult {
	t.Helper()
	m := &engine.Message{Topic: "T", QueueID: 0, Body: []byte(key),
		Properties: map[string]string{"KEYS": key, record.PropertyDelayTimeLevel: strconv.Itoa(level)}}
	r, err := e.store.Put(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != record.ScheduleTopic {
		t.Fatalf("put to %s", r.Topic)
	}
	return r
}

// delivered returns the message at T/0 offset off, waiting for it with
// a held request (woken by the dispatch hook) up to within.
func (e *env) delivered(t *testing.T, off int64, within time.Duration) *record.MessageExt {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if phy, err := e.store.CommitLogOffsetInQueue("T", 0, off); err == nil {
			m, err := e.store.LookMessageByOffset(phy)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("nothing delivered at T/0 offset %d", off)
		}
		from := min(off, e.store.MaxOffsetInQueue("T", 0))
		e.hold.Wait(context.Background(), "T", 0, from, nil, left, func() int64 { return e.store.MaxOffsetInQueue("T", 0) })
	}
}

// TestDueOrderAndLatency: the delivery goroutine sleeps on its clock until
// the earliest head is due, then delivers it: with a fake clock advanced
// from due time to due time, every message is delivered at exactly its due
// time (its new store timestamp), in due order across levels.
func TestDueOrderAndLatency(t *testing.T) {
	levels := []time.Duration{120 * time.Millisecond, 40 * time.Millisecond, 200 * time.Millisecond}
	clk := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	e := start(t, afero.NewMemMapFs(), levels, clk, false)
	due := map[string]int64{}
	var end int64
	for _, lv := range []int{3, 1, 2, 2} {
		key := "L" + strconv.Itoa(lv) + "-" + strconv.Itoa(len(due))
		r := e.putDelayed(t, lv, key)
		due[key] = r.StoreTimestamp + levels[lv-1].Milliseconds()
		end = r.WroteOffset + int64(r.WroteBytes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.store.WaitDispatched(ctx, end); err != nil {
		t.Fatal(err)
	}
	// Due order: the two level-2 messages at +40 ms, level 1 at +120 ms,
	// level 3 at +200 ms.
	var last int64
	for i, at := range []int64{40, 40, 120, 200} {
		// The loop waits for the next due time, beside the store's
		// tickers on the same clock.
		if err := clk.BlockUntilContext(ctx, storeTickers+1); err != nil {
			t.Fatal(err)
		}
		if d := time.Duration(1_700_000_000_000+at-clk.Now().UnixMilli()) * time.Millisecond; d > 0 {
			clk.Advance(d)
		}
		m := e.delivered(t, int64(i), 10*time.Second)
		key := m.Properties["KEYS"]
		if m.StoreTimestamp != due[key] {
			t.Errorf("%s delivered at %d, %d ms from its due time", key, m.StoreTimestamp, m.StoreTimestamp-due[key])
		}
		if due[key] < last {
			t.Errorf("%s delivered out of due order", key)
		}
		last = due[key]
		if m.Properties[record.PropertyDelayTimeLevel] != "" || m.Properties[record.PropertyRealTopic] != "T" ||
			m.Properties[record.PropertyWaitStoreMsgOK] != "false" || m.QueueID != 0 {
			t.Errorf("delivered %+v", m.Properties)
		}
	}
	// A delivery is visible before its offset moves; after Close (which
	// waits for the delivery goroutine) the offsets are final.
	e.close(t)
	if o := e.svc.Offsets(); o[1] != 1 || o[2] != 2 || o[3] != 1 {
		t.Fatalf("offsets %v", o)
	}
}

// newClock starts at a plausible time (the engine refuses store time 0).
func newClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
}

func manual(t *testing.T, afs afero.Fs, c *clockwork.FakeClock) *env {
	return start(t, afs, []time.Duration{time.Second, 5 * time.Second}, c, true)
}

// deliver dispatches, delivers what is due and dispatches the deliveries.
func (e *env) deliver(t *testing.T) time.Duration {
	t.Helper()
	if _, err := engineops.Of(e.store).Dispatch(); err != nil {
		t.Fatal(err)
	}
	next, err := e.svc.DeliverDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engineops.Of(e.store).Dispatch(); err != nil {
		t.Fatal(err)
	}
	return next
}

func (e *env) count() int64 { return e.store.MaxOffsetInQueue("T", 0) }

func TestManualDelivery(t *testing.T) {
	c := newClock()
	e := manual(t, afero.NewMemMapFs(), c)
	defer e.close(t)
	e.putDelayed(t, 2, "a")
	e.putDelayed(t, 1, "b")
	if next := e.deliver(t); next != time.Second || e.count() != 0 {
		t.Fatalf("next %v, delivered %d", next, e.count())
	}
	c.Advance(999 * time.Millisecond)
	if next := e.deliver(t); next != time.Millisecond || e.count() != 0 {
		t.Fatalf("next %v, delivered %d", next, e.count())
	}
	c.Advance(time.Millisecond)
	if next := e.deliver(t); next != 4*time.Second || e.count() != 1 {
		t.Fatalf("next %v, delivered %d", next, e.count())
	}
	c.Advance(4 * time.Second)
	if next := e.deliver(t); next != -1 || e.count() != 2 {
		t.Fatalf("next %v, delivered %d", next, e.count())
	}
}

// TestOffsetsPersistAndClamp: delayOffset.json round-trips; offsets
// outside their queue are clamped to [min, max] on load.
func TestOffsetsPersistAndClamp(t *testing.T) {
	c := newClock()
	afs := afero.NewMemMapFs()
	e := manual(t, afs, c)
	e.putDelayed(t, 1, "a")
	e.putDelayed(t, 1, "b")
	c.Advance(time.Second)
	e.deliver(t)
	e.close(t) // Close persists
	var f struct {
		OffsetTable map[int]int64 `json:"offsetTable"`
	}
	data, _ := backend.ReadFile(memfs.New(afs), schedule.File)
	if err := configfile.Decode(data, &f); err != nil || f.OffsetTable[1] != 2 {
		t.Fatalf("%s %v", data, err)
	}
	// RocketMQ's own format (bare keys), an offset past the queue's end,
	// a negative one and an unknown level.
	fs := memfs.New(afs)
	fs.Remove(schedule.File)
	if err := backend.WriteFileAtomic(fs, schedule.File, []byte(`{"offsetTable":{1:50,2:-3,9:4}}`)); err != nil {
		t.Fatal(err)
	}
	e = manual(t, afs, c)
	defer e.close(t)
	if o := e.svc.Offsets(); o[1] != 2 || o[2] != 0 || o[9] != 4 {
		t.Fatalf("offsets %v", o)
	}
	// Nothing is delivered twice after the clamp.
	c.Advance(time.Hour)
	e.deliver(t)
	if e.count() != 2 {
		t.Fatalf("%d delivered", e.count())
	}
}

// TestAtLeastOnceAcrossPowerCut: a due message not delivered before a power
// cut is delivered after restart; one delivered but whose offset was not
// yet persisted is delivered again; one whose offset was persisted is not.
func TestAtLeastOnceAcrossPowerCut(t *testing.T) {
	c := newClock()
	afs := afero.NewMemMapFs()
	e := manual(t, afs, c)
	e.putDelayed(t, 1, "a")
	e.putDelayed(t, 1, "b")
	if err := e.store.FlushCommitLog(0); err != nil { // the puts are durable
		t.Fatal(err)
	}
	c.Advance(time.Second)
	// Due, not delivered: power cut.
	e.powerCut()

	e = manual(t, afs, c)
	e.deliver(t)
	if e.count() != 2 {
		t.Fatalf("after restart %d delivered, want 2", e.count())
	}
	// Delivered (and even synced) but the offset not persisted: again.
	if err := e.store.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	e.powerCut()
	e = manual(t, afs, c)
	e.deliver(t)
	if e.count() != 4 {
		t.Fatalf("%d delivered, want the two again", e.count())
	}
	// Persist syncs the deliveries first, then saves: after a power cut
	// nothing is delivered a third time, and nothing is lost.
	if err := e.svc.Persist(); err != nil {
		t.Fatal(err)
	}
	e.powerCut()
	e = manual(t, afs, c)
	defer e.close(t)
	e.deliver(t)
	if e.count() != 4 || e.svc.Offsets()[1] != 2 {
		t.Fatalf("%d delivered, offsets %v", e.count(), e.svc.Offsets())
	}
}

func TestDeliverAfterClose(t *testing.T) {
	c := newClock()
	e := manual(t, afero.NewMemMapFs(), c)
	e.close(t)
	if err := e.svc.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := schedule.New(e.fs, schedule.Config{}).DeliverDue(context.Background()); !errors.Is(err, schedule.ErrClosed) {
		t.Fatal(err)
	}
}
